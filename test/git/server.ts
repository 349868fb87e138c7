// The git server lives in core/embedded (the embedded default serves its tenant repository with it); tests use the
// same code.
export * from '../../core/programs/embedded/gitserver.ts';

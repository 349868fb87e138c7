/**
 * The contract between the GitOps source (producer) and the applier (consumer). The source turns one revision of a
 * git repository into an immutable Artifact; the applier consumes only artifacts and never touches git.
 */

/** SourceDocument is one YAML document found under the source path. */
export interface SourceDocument {
  /** file path relative to the repository root */
  file: string;
  /** position of the document in its file (0-based), for multi-document files */
  index: number;
  /** the parsed object */
  object: Record<string, unknown>;
}

/** ParseError is a file that could not be read as YAML; it blocks pruning for the whole revision. */
export interface ParseError {
  file: string;
  /** line and column when known */
  line?: number;
  column?: number;
  message: string;
}

/** Artifact is one revision of a source, parsed. Immutable once produced. */
export interface Artifact {
  /** repository URL */
  url: string;
  /** the ref that was asked for (branch, tag, semver range or commit) */
  ref: string;
  /** the commit the ref resolved to */
  revision: string;
  /** sha256 over the files read (path and content), so equal trees give equal digests */
  digest: string;
  /** the directory read, relative to the repository root */
  path: string;
  documents: readonly SourceDocument[];
  parseErrors: readonly ParseError[];
  /** signature verification result, when verification is on */
  verification?: { verified: boolean; signer?: string; reason?: string };
  fetchedAt: string;
}

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';
import type { Block } from './blocks.ts';

/**
 * typecheckProblems typechecks the TypeScript blocks marked `<!-- check: typecheck as PATH -->`: the blocks of one
 * page are the files of one ES module package, in a directory under the repository's node_modules (so `vitest` and
 * the other dev dependencies resolve), with `@virtualcluster-ts/plugin-sdk` and its subpaths mapped to the SDK's
 * sources as tsconfig.json maps them. Each problem names the page and the line of the block.
 */
export function typecheckProblems(root: string, blocks: readonly Block[]): string[] {
  const marked = blocks.filter((b) => b.lang === 'ts' && b.mark?.kind === 'typecheck');
  const cache = join(root, 'node_modules/.cache');
  mkdirSync(cache, { recursive: true });
  const dir = mkdtempSync(join(cache, 'vc-docblock-ts-'));
  const sdk = join(root, 'plugins/sdk/src');
  try {
    // one program for every page (the SDK is read once), each page's package in a directory of its own
    const pages = [...new Set(marked.map((b) => b.page))];
    const files = new Map<string, Block>();
    for (const b of marked) {
      const pkg = join(dir, String(pages.indexOf(b.page)));
      const file = join(pkg, (b.mark as { path: string }).path);
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(join(pkg, 'package.json'), '{ "type": "module" }\n');
      writeFileSync(file, b.body + '\n');
      files.set(file, b);
    }
    const program = ts.createProgram([...files.keys()], {
      target: ts.ScriptTarget.ES2023,
      lib: ['lib.es2023.d.ts'],
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      allowImportingTsExtensions: true,
      noEmit: true,
      strict: true,
      skipLibCheck: true,
      types: ['node'],
      paths: {
        '@virtualcluster-ts/plugin-sdk': [join(sdk, 'index.ts')],
        '@virtualcluster-ts/plugin-sdk/testing': [join(sdk, 'testing.ts')],
        '@virtualcluster-ts/plugin-sdk/*': [join(sdk, '*/index.ts')],
      },
    });
    return ts.getPreEmitDiagnostics(program).map((d) => {
      const text = ts.flattenDiagnosticMessageText(d.messageText, ' ');
      const b = d.file && files.get(d.file.fileName);
      if (!b || d.start === undefined) return `${d.file ? relative(dir, d.file.fileName) : '(program)'}: ${text}`;
      return `${b.page}:${b.line + 1 + d.file!.getLineAndCharacterOfPosition(d.start).line}: ${text}`;
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

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
  const byPage = new Map<string, Array<Block & { path: string }>>();
  for (const b of blocks)
    if (b.lang === 'ts' && b.mark?.kind === 'typecheck')
      byPage.set(b.page, [...(byPage.get(b.page) ?? []), { ...b, path: b.mark.path }]);
  const out: string[] = [];
  const cache = join(root, 'node_modules/.cache');
  mkdirSync(cache, { recursive: true });
  const sdk = join(root, 'plugins/sdk/src');
  for (const [page, files] of byPage) {
    const dir = mkdtempSync(join(cache, 'vc-docblock-ts-'));
    try {
      writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
      for (const f of files) {
        mkdirSync(dirname(join(dir, f.path)), { recursive: true });
        writeFileSync(join(dir, f.path), f.body + '\n');
      }
      const program = ts.createProgram(
        files.map((f) => join(dir, f.path)),
        {
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
        },
      );
      for (const d of ts.getPreEmitDiagnostics(program)) {
        const text = ts.flattenDiagnosticMessageText(d.messageText, ' ');
        const f = d.file && files.find((x) => join(dir, x.path) === d.file!.fileName);
        if (!f || d.start === undefined) {
          out.push(`${page}: ${d.file ? relative(dir, d.file.fileName) : ''} ${text}`);
          continue;
        }
        const { line } = d.file!.getLineAndCharacterOfPosition(d.start);
        out.push(`${page}:${f.line + 1 + line}: ${text}`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return out;
}

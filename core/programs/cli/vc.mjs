#!/usr/bin/env node
// The `vc` command. It runs the compiled JavaScript under dist/ (built by `npm ci` through the `prepare` script, or
// `npm run build`), which starts in a fraction of a second. Without dist/, or with VC_FROM_SOURCE=1 while editing
// the sources, it registers tsx (a development dependency: a checkout with `npm ci` has it, the image does not) and
// runs the TypeScript sources as they are.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const compiled = new URL('../../../dist/core/programs/cli/main.js', import.meta.url);
if (process.env.VC_FROM_SOURCE !== '1' && existsSync(fileURLToPath(compiled))) {
  await import(compiled.href);
} else {
  let register;
  try {
    ({ register } = await import('tsx/esm/api'));
  } catch {
    process.stderr.write(
      `vc: ${fileURLToPath(compiled)} is missing and tsx is not installed to run the sources: ` +
        'run `npm run build` (or `npm ci`, which builds it) in the repository\n',
    );
    process.exit(1);
  }
  register();
  await import('./main.ts');
}

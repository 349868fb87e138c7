#!/usr/bin/env node
// The `vc` command. It runs the compiled JavaScript under dist/ (built by `npm ci` through the `prepare` script, or
// `npm run build`), which starts in a fraction of a second. Without dist/, or with VC_FROM_SOURCE=1 while editing
// the sources, it registers tsx (a development dependency: a checkout with `npm ci` has it, the image does not) and
// runs the TypeScript sources as they are.
import { existsSync } from 'node:fs';
import module from 'node:module';
import { fileURLToPath } from 'node:url';

// MIN_NODE is the oldest Node.js the program's production dependencies accept (undici, the HTTP library of the
// Kubernetes client, needs 22.19); vcbin.test.ts checks it against every production package's `engines`. An older
// Node would stop at the first import with a stack, so say it in one line instead. npm itself may run on Node 20:
// `npm ci` installs Node 22 (the `node` dev dependency), which npm scripts and `npx vc` put first on the PATH.
const MIN_NODE = '22.19.0';
const older = (a, b) => {
  const [x, y] = [a, b].map((v) => v.split('.').map(Number));
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] < y[i];
  return false;
};
if (older(process.versions.node, MIN_NODE)) {
  process.stderr.write(
    `vc: Node.js ${process.versions.node} is older than the ${MIN_NODE} vc needs: put a newer node first on the ` +
      'PATH, or run `npx vc` in the repository (it runs on the Node 22 that `npm ci` installs)\n',
  );
  process.exit(1);
}

// Node's compile cache (under the system's temporary directory; NODE_DISABLE_COMPILE_CACHE=1 turns it off) spares
// every later run compiling the same modules again: about a fifth of the CPU time of a short command such as `vc get`.
module.enableCompileCache?.();

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

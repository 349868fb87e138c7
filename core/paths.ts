import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE_NAME = 'virtualcluster-ts';

function findPackageRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === PACKAGE_NAME)
      return dir;
    if (dirname(dir) === dir) throw new Error(`cannot find the ${PACKAGE_NAME} package above ${from}`);
  }
}

/**
 * packageRoot is the directory of this package's package.json. Files the programs read at run time (schemas,
 * deploy/, toolchain scripts) are located from it, so they are found the same way from the TypeScript sources and
 * from the compiled JavaScript under dist/.
 */
export const packageRoot = findPackageRoot(dirname(fileURLToPath(import.meta.url)));

/** fromPackageRoot joins path segments onto packageRoot. */
export const fromPackageRoot = (...segments: string[]): string => join(packageRoot, ...segments);

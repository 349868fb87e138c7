import { readFileSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadProgram, renderCLIReference } from './clidoc.ts';
import { registeredMetrics, renderMetricsReference } from './metricsdoc.ts';
import { renderReasonsReference } from './reasonsdoc.ts';
import { renderConfigReference, renderCRDReference } from './schemadoc.ts';

/**
 * This module is `npm run docs:gen`: it writes the generated reference pages under docs/reference/ from the code
 * they describe. `--check` writes nothing and exits 1 naming every stale page.
 */

/** ROOT is the repository's root folder. */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');

/** GeneratedDoc is one generated page: its path from the repository root and its full text. */
export interface GeneratedDoc {
  file: string;
  text: string;
}

/** generatedDocs renders every generated reference page in memory. */
export async function generatedDocs(): Promise<GeneratedDoc[]> {
  return [
    { file: 'docs/reference/cli.md', text: renderCLIReference(await loadProgram()) },
    { file: 'docs/reference/crds.md', text: renderCRDReference() },
    { file: 'docs/reference/configuration.md', text: renderConfigReference() },
    { file: 'docs/reference/metrics.md', text: renderMetricsReference(await registeredMetrics()) },
    { file: 'docs/reference/reasons.md', text: renderReasonsReference(ROOT) },
  ];
}

/** staleDocs are the generated pages whose file is missing or differs from what the code renders now. */
export async function staleDocs(root = ROOT): Promise<string[]> {
  const out: string[] = [];
  for (const d of await generatedDocs()) {
    const path = join(root, d.file);
    if (!existsSync(path) || readFileSync(path, 'utf8') !== d.text) out.push(d.file);
  }
  return out;
}

async function main(): Promise<void> {
  if (process.argv.includes('--check')) {
    const stale = await staleDocs();
    for (const f of stale) process.stderr.write(`${f} is stale: run npm run docs:gen\n`);
    process.exit(stale.length ? 1 : 0);
  }
  for (const d of await generatedDocs()) {
    const path = join(ROOT, d.file);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, d.text);
    process.stdout.write(`wrote ${relative(process.cwd(), path)}\n`);
  }
  // the vc program's modules keep timers (default metrics) alive: this script is done
  process.exit(0);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();

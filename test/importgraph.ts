import { cruise, type ICruiseResult } from 'dependency-cruiser';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';
import { dirname } from 'node:path';
import { fromPackageRoot } from '../core/paths.ts';

/**
 * This module measures the folder-level import graph of the production sources and its strongly connected
 * components: two folders are in one component when each reaches the other through imports. core/layers.test.ts uses
 * it to show which folders a cycle joins; run it directly (`npx tsx test/importgraph.ts`) to print the figures.
 */

/** FileEdge is one import of a file by another, both repository-relative paths. */
export interface FileEdge {
  from: string;
  to: string;
}

/** FolderGraph maps each folder to the folders its files import (itself excluded), both sorted. */
export type FolderGraph = Map<string, Set<string>>;

/** isProdSource says whether a repository path is a production TypeScript file: not a test, not under test/. */
export function isProdSource(path: string): boolean {
  return (
    path.endsWith('.ts') && !path.endsWith('.test.ts') && !path.startsWith('test/') && !path.startsWith('node_modules/')
  );
}

/** folderGraph collapses file imports between production files into imports between their folders. */
export function folderGraph(edges: readonly FileEdge[]): FolderGraph {
  const graph: FolderGraph = new Map();
  const node = (folder: string): Set<string> => {
    let out = graph.get(folder);
    if (!out) graph.set(folder, (out = new Set()));
    return out;
  };
  for (const { from, to } of edges) {
    if (!isProdSource(from) || !isProdSource(to)) continue;
    const a = dirname(from);
    const b = dirname(to);
    node(b);
    if (a !== b) node(a).add(b);
    else node(a);
  }
  return graph;
}

/**
 * stronglyConnected returns the components of more than one folder (Tarjan's algorithm), each sorted, the list
 * sorted by its first folder. A folder alone is not a cycle: a folder may import itself freely.
 */
export function stronglyConnected(graph: FolderGraph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) components.push(component.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return components.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

/** cruiseEdges returns every resolved import between repository files under the given roots, as dependency-cruiser reads them. */
export async function cruiseEdges(
  roots: readonly string[] = ['core', 'gitops', 'plugins', 'schemas'],
): Promise<FileEdge[]> {
  const result = await cruise(
    [...roots],
    {
      baseDir: fromPackageRoot(),
      tsPreCompilationDeps: true,
      doNotFollow: { path: 'node_modules' },
      exclude: { path: '(^|/)(node_modules|dist)/' },
      tsConfig: { fileName: 'tsconfig.json' },
    },
    undefined,
    { tsConfig: extractTSConfig(fromPackageRoot('tsconfig.json')) },
  );
  const output = result.output as ICruiseResult;
  return output.modules.flatMap((m) =>
    m.dependencies.filter((d) => !d.couldNotResolve && !d.coreModule).map((d) => ({ from: m.source, to: d.resolved })),
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const graph = folderGraph(await cruiseEdges());
  const components = stronglyConnected(graph);
  console.log(`${graph.size} folders, ${components.length} strongly connected components of more than one folder`);
  for (const c of components) console.log(`  ${c.length}: ${c.join(' ')}`);
}

import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * EmbeddedShape is which clusters the embedded default runs: the meta cluster apart from the super clusters or not,
 * and how many super clusters.
 */
export interface EmbeddedShape {
  /** meta: the meta cluster runs apart from the super clusters r1..rN */
  meta: boolean;
  superClusters: number;
}

/**
 * shapeOf reads the shape an earlier start left in a state directory, or undefined for a directory never started.
 * The clusters' directories say it: the first cluster is always `clusters/super`; the meta cluster apart makes every
 * super cluster an added one, r1 included (`clusters/r1`), while without it r1 is the first cluster itself and only
 * r2..rN are added.
 */
export function shapeOf(stateDir: string): EmbeddedShape | undefined {
  const dir = join(stateDir, 'clusters');
  if (!existsSync(join(dir, 'super'))) return undefined;
  const added = readdirSync(dir)
    .filter((n) => /^r[1-9]$/.test(n))
    .map((n) => Number(n.slice(1)));
  const meta = added.includes(1);
  return { meta, superClusters: Math.max(1, ...added) };
}

/**
 * resolveShape is the shape a start runs: what was asked, where asked, else what the state directory was started
 * with, else one super cluster without the meta cluster apart. It throws an Error naming the option and the state
 * directory when the state directory cannot take what was asked: its meta cluster would turn into a super cluster or
 * the other way round (its objects and Pods stay where they are), or a super cluster on which tenants' namespaces may
 * be placed would be left out.
 */
export function resolveShape(
  asked: { meta?: boolean; superClusters?: number },
  recorded: EmbeddedShape | undefined,
  stateDir: string,
): EmbeddedShape {
  const shape = {
    meta: asked.meta ?? recorded?.meta ?? false,
    superClusters: asked.superClusters ?? recorded?.superClusters ?? 1,
  };
  if (!recorded) return shape;
  if (shape.meta && !recorded.meta)
    throw new Error(
      `--meta: ${stateDir} was started without --meta, so its first cluster is the meta cluster and super cluster ` +
        'r1 at once and holds tenant Pods; it cannot become a meta cluster apart: start it without --meta, or give ' +
        'another --state-dir',
    );
  if (!shape.meta && recorded.meta)
    throw new Error(
      `--meta: ${stateDir} was started with --meta, so its meta cluster holds no node and r1 is a cluster of its ` +
        'own; it cannot become super cluster r1: start it with --meta, or give another --state-dir',
    );
  if (shape.superClusters < recorded.superClusters)
    throw new Error(
      `--super-clusters ${shape.superClusters}: ${stateDir} runs ${recorded.superClusters} super clusters ` +
        `(r1..r${recorded.superClusters}), and tenants' namespaces may be placed on r${recorded.superClusters}; ` +
        `a restart adds super clusters but removes none: give --super-clusters ${recorded.superClusters} or more ` +
        '(or leave it out), or another --state-dir',
    );
  return shape;
}

/**
 * Apply waves: the objects of one revision go in waves (APPLY_WAVE_ANNOTATION, ascending), each wave only once every
 * object of the waves before it is healthy, so that a tenant another depends on is Running before that one is
 * created. How an object is judged is the caller's (gitops/health.ts objectHealth in the controller).
 */
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { describeRef, type DesiredObject } from './objects.ts';
import type { Stop } from './status.ts';

/** WaveHealth judges one applied object from its live state (undefined: not found). */
export type WaveHealth = (
  kind: string,
  live: KubeObject | undefined,
) => { health: 'Healthy' | 'Progressing' | 'Failed' | 'Unknown'; message?: string };

/** exists is the judge when the caller gives none: an object is healthy once it exists. */
export const exists: WaveHealth = (_kind, live) =>
  live ? { health: 'Healthy' } : { health: 'Progressing', message: 'not found' };

/**
 * waveStop reads the live objects of `wave` and says why the wave `next` may not go yet (WaveNotHealthy, stalled
 * when one of them Failed: only a new revision helps), or undefined when every one of them is healthy.
 */
export async function waveStop(
  client: KubeClient,
  health: WaveHealth,
  revision: string,
  objects: readonly DesiredObject[],
  wave: number,
  next: number,
): Promise<Stop | undefined> {
  const notHealthy: string[] = [];
  let failed = false;
  for (const d of objects) {
    const live = await client.getOrNull<KubeObject>(d.resource, d.ref.namespace, d.ref.name);
    const h = health(d.ref.kind, live ?? undefined);
    if (h.health === 'Healthy') continue;
    failed ||= h.health === 'Failed';
    notHealthy.push(`${d.file}: ${describeRef(d.ref)}: ${h.health}${h.message ? ` (${h.message})` : ''}`);
  }
  if (!notHealthy.length) return undefined;
  return {
    reason: 'WaveNotHealthy',
    stalled: failed,
    message:
      `Revision ${revision}: wave ${wave} is not healthy, so wave ${next} and later are not applied and nothing is ` +
      `pruned:\n${notHealthy.join('\n')}`,
  };
}

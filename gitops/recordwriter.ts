import type { Logger } from 'pino';
import type { EventRecorder } from '../core/controller/events.ts';
import type { KubeClient } from '../core/kube/client.ts';
import { R } from '../core/kube/resources.ts';
import { IDENTITY } from '../core/names/names.ts';
import type { GitSource } from './applier/gitsource.ts';
import {
  ownsRecord,
  readRecord,
  recordedData,
  recordObject,
  type AppliedRecord,
  type ConfigMapObject,
  type RecordData,
} from './record.ts';
import { ALLOW_REVISION_ANNOTATION } from './source/history.ts';

/** RecordWriter is what writing a record takes: the meta cluster, the GitSource's event recorder and a logger. */
export interface RecordWriter {
  meta: KubeClient;
  events: EventRecorder;
  log: Logger;
}

/**
 * keepRecord writes the revision just applied (which the next revision must descend from) and the deletion
 * confirmation just used to the GitSource's record (gitops/record.ts), keeping what it already holds. It never takes
 * over a ConfigMap of that name it did not write for this GitSource; a failed write is reported as an event, and the
 * record is kept in memory all the same: the record to go on with is returned.
 */
export async function keepRecord(
  w: RecordWriter,
  gs: GitSource,
  record: AppliedRecord,
  update: RecordData,
): Promise<AppliedRecord> {
  const had = recordedData(record);
  const next: RecordData = { ...had, ...update };
  if (record.kind === 'present' && had.revision === next.revision && had.confirmation === next.confirmation)
    return record;
  const kept: AppliedRecord = { kind: 'present', ...next };
  const want = recordObject(gs, next);
  const { namespace, name } = want.metadata as { namespace: string; name: string };
  try {
    const cur = await w.meta.getOrNull<ConfigMapObject>(R.configmaps, namespace, name);
    if (!cur) {
      await w.meta.create(R.configmaps, want, { fieldManager: IDENTITY.gitops });
    } else if (ownsRecord(cur, gs)) {
      await w.meta.update(R.configmaps, { ...cur, data: want.data }, { fieldManager: IDENTITY.gitops });
    } else {
      const found = readRecord(cur, gs);
      await w.events.record(
        gs,
        'Warning',
        'RecordRefused',
        `${found.kind === 'foreign' ? found.why : ''}; not overwritten, so after a restart the next revision needs ${ALLOW_REVISION_ANNOTATION}`,
      );
    }
  } catch (e) {
    w.log.warn(
      { gitSource: `${gs.metadata.namespace}/${gs.metadata.name}`, err: e instanceof Error ? e.message : String(e) },
      'writing the applied record failed',
    );
    await w.events.record(
      gs,
      'Warning',
      'RecordFailed',
      `could not write ConfigMap ${namespace}/${name}: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
  return kept;
}

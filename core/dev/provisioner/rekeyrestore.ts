import { mkdtempSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { rekeyEtcd } from '../../backup/rekey.ts';
import { restoreDataDir, type EtcdMember } from '../../backup/restore.ts';
import { childLogger } from '../../log.ts';
import { LocalEtcd } from '../local/etcd.ts';

const log = childLogger({ component: 'restore' });

/**
 * restoreRekeyed makes dataDir from a snapshot of another tenant (`vc restore --as`): etcdutl restores it next to
 * dataDir, a private etcd is started on it on free ports, every key under `/<sourceRoot>` moves to `/<root>` (the
 * etcd prefix the local provisioner gives each tenant's apiserver), the etcd stops, and the directory is renamed into
 * place. Nothing of a running tenant is touched; a failure leaves no dataDir behind.
 */
export async function restoreRekeyed(
  etcdutl: string,
  snapshot: string,
  dataDir: string,
  member: EtcdMember,
  sourceRoot: string,
  root: string,
): Promise<void> {
  const work = mkdtempSync(join(dirname(dataDir), 'rekey-'));
  try {
    await restoreDataDir(etcdutl, snapshot, join(work, 'data'), member);
    const etcd = await LocalEtcd.start({ dir: work, name: `${root}/etcd-rekey` });
    try {
      const moved = await rekeyEtcd(etcd.endpoint, `/${sourceRoot}`, `/${root}`);
      log.info({ tenant: root, from: sourceRoot, keys: moved }, 'snapshot keys moved to this tenant');
    } finally {
      await etcd.stop();
    }
    renameSync(join(work, 'data'), dataDir);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

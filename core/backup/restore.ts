import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** EtcdMember is the identity the restored data directory gives its single member. */
export interface EtcdMember {
  name: string;
  peerUrl: string;
}

/**
 * BUMP_REVISION is how far a restore moves etcd's revision past the snapshot's, with every older revision marked
 * compacted: the apiserver's and every informer's resourceVersions then lie in the compacted past, so watches end
 * with 410 Gone and everyone relists the restored state, instead of waiting for revisions the snapshot never had.
 * A billion is the figure the Kubernetes documentation gives for etcd restores.
 */
export const BUMP_REVISION = 1_000_000_000;

/**
 * restoreDataDir turns a snapshot file into a new etcd data directory with etcdutl (the etcd server cannot do it
 * itself). dataDir must not exist; etcdutl checks the sha256 etcd appended to the snapshot, so a damaged file fails
 * here, before the caller has stopped anything.
 */
export async function restoreDataDir(etcdutl: string, snapshot: string, dataDir: string, m: EtcdMember): Promise<void> {
  if (existsSync(dataDir)) throw new Error(`restoring etcd: ${dataDir} exists`);
  try {
    await run(
      etcdutl,
      [
        'snapshot',
        'restore',
        snapshot,
        `--data-dir=${dataDir}`,
        `--name=${m.name}`,
        `--initial-cluster=${m.name}=${m.peerUrl}`,
        `--initial-advertise-peer-urls=${m.peerUrl}`,
        `--bump-revision=${BUMP_REVISION}`,
        '--mark-compacted',
      ],
      { timeout: 10 * 60_000, maxBuffer: 16 * 1024 * 1024 },
    );
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    const why = (err.stderr ?? '').trim().split('\n').slice(-3).join('; ') || err.message;
    throw new Error(`etcdutl snapshot restore of ${snapshot}: ${why}`, { cause: e });
  }
}

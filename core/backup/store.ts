import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { copyFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SnapshotMeta } from './catalog.ts';

/** TenantRef names a tenant in a store: its VirtualCluster's namespace and name. */
export interface TenantRef {
  namespace: string;
  name: string;
}

/** BackupStore keeps snapshot files with their metadata; each platform setting (directory, object store) is one. */
export interface BackupStore {
  /** describe says where the store is, for messages */
  readonly describe: string;
  /** put stores the file under meta.tenant and meta.id; the metadata is written last, so a listed snapshot is whole */
  put(meta: SnapshotMeta, file: string): Promise<void>;
  /** list returns the tenant's snapshots, oldest first */
  list(t: TenantRef): Promise<SnapshotMeta[]>;
  /** fetch copies a snapshot into path and checks its size and sha256 against its metadata (SnapshotCorrupt) */
  fetch(t: TenantRef, id: string, path: string): Promise<SnapshotMeta>;
  /** delete removes a snapshot; a missing one is not an error */
  delete(t: TenantRef, id: string): Promise<void>;
}

/** SnapshotNotFound is thrown for a snapshot id the store does not hold. */
export class SnapshotNotFound extends Error {
  readonly reason = 'SnapshotNotFound';
}

/** SnapshotCorrupt is thrown when a fetched snapshot's size or checksum is not what its metadata says. */
export class SnapshotCorrupt extends Error {
  readonly reason = 'SnapshotCorrupt';
}

/** sha256File returns the sha256 (hex) and size of a file. */
export async function sha256File(path: string): Promise<{ sha256: string; sizeBytes: number }> {
  const h = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    h.update(chunk);
    size += chunk.length;
  }
  return { sha256: h.digest('hex'), sizeBytes: size };
}

/**
 * verifySnapshot checks a snapshot file against its metadata and throws SnapshotCorrupt naming the snapshot and the
 * field that does not match.
 */
export async function verifySnapshot(where: string, meta: SnapshotMeta, path: string): Promise<void> {
  const got = await sha256File(path);
  if (got.sizeBytes !== meta.sizeBytes)
    throw new SnapshotCorrupt(`${where}: sizeBytes is ${got.sizeBytes}, its metadata says ${meta.sizeBytes}`);
  if (got.sha256 !== meta.sha256)
    throw new SnapshotCorrupt(`${where}: the data's sha256 is ${got.sha256}, its metadata says ${meta.sha256}`);
}

/** ID_PATTERN keeps ids to names that cannot leave the tenant's folder or key prefix. */
const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** checkId refuses an id that is not a plain name. */
export function checkId(id: string): void {
  if (!ID_PATTERN.test(id)) throw new SnapshotNotFound(`snapshot id ${JSON.stringify(id)} is not a snapshot name`);
}

/**
 * DirectoryStore keeps snapshots in a directory (a local path or a mounted volume):
 * `<dir>/<namespace>/<name>/<id>.db` and `<id>.json` next to it.
 */
export class DirectoryStore implements BackupStore {
  readonly describe: string;

  constructor(private readonly dir: string) {
    this.describe = `directory ${dir}`;
  }

  private folder(t: TenantRef): string {
    checkId(t.namespace);
    checkId(t.name);
    return join(this.dir, t.namespace, t.name);
  }

  async put(meta: SnapshotMeta, file: string): Promise<void> {
    checkId(meta.id);
    const folder = this.folder(meta.tenant);
    mkdirSync(folder, { recursive: true });
    const db = join(folder, `${meta.id}.db`);
    await copyFile(file, `${db}.part`);
    renameSync(`${db}.part`, db);
    await writeFile(join(folder, `${meta.id}.json.part`), JSON.stringify(meta, null, 2) + '\n');
    renameSync(join(folder, `${meta.id}.json.part`), join(folder, `${meta.id}.json`));
  }

  async list(t: TenantRef): Promise<SnapshotMeta[]> {
    const folder = this.folder(t);
    if (!existsSync(folder)) return [];
    return readdirSync(folder)
      .filter((f) => f.endsWith('.json'))
      .map((f) => JSON.parse(readFileSync(join(folder, f), 'utf8')) as SnapshotMeta)
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  }

  async fetch(t: TenantRef, id: string, path: string): Promise<SnapshotMeta> {
    checkId(id);
    const folder = this.folder(t);
    const metaFile = join(folder, `${id}.json`);
    if (!existsSync(metaFile))
      throw new SnapshotNotFound(`snapshot ${id} of ${t.namespace}/${t.name} is not in ${this.describe}`);
    const meta = JSON.parse(readFileSync(metaFile, 'utf8')) as SnapshotMeta;
    await copyFile(join(folder, `${id}.db`), path);
    await verifySnapshot(`snapshot ${id} of ${t.namespace}/${t.name} in ${this.describe}`, meta, path);
    return meta;
  }

  async delete(t: TenantRef, id: string): Promise<void> {
    checkId(id);
    const folder = this.folder(t);
    rmSync(join(folder, `${id}.json`), { force: true });
    rmSync(join(folder, `${id}.db`), { force: true });
  }
}

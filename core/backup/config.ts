import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ObjectStore } from './s3.ts';
import { DirectoryStore, type BackupStore } from './store.ts';

/** ObjectStoreConfig is `backups.s3` of the manager's configuration. */
export interface ObjectStoreConfig {
  endpoint: string;
  bucket: string;
  region?: string;
  prefix?: string;
  /** a PEM file of the CA of an https endpoint with a private certificate */
  caFile?: string;
  /** a directory (a mounted Secret) with the files accessKeyId and secretAccessKey */
  credentialsDir: string;
}

/** BackupsConfig is `backups` of the manager's configuration: one destination, and retention. */
export interface BackupsConfig {
  directory?: string;
  s3?: ObjectStoreConfig;
  retention?: { count?: number; maxAgeSeconds?: number };
  /** how often records of tenants deleted under Retain are looked at (default 60) */
  retainedCheckSeconds?: number;
}

/**
 * storeFromConfig makes the platform's backup store from the manager's configuration: a DirectoryStore for
 * `directory`, an ObjectStore for `s3` (its key pair read from credentialsDir, trailing newlines dropped). A missing
 * credentials file is an error naming the field and the file.
 */
export function storeFromConfig(c: BackupsConfig): BackupStore {
  if (!c.directory === !c.s3) throw new Error('backups: set one of directory or s3');
  if (c.directory) return new DirectoryStore(c.directory);
  if (!c.s3) throw new Error('backups: set one of directory or s3');
  const read = (f: string) => {
    const path = join(c.s3!.credentialsDir, f);
    try {
      return readFileSync(path, 'utf8').replace(/\r?\n$/, '');
    } catch (e) {
      throw new Error(`backups.s3.credentialsDir: cannot read ${path}: ${(e as Error).message}`, { cause: e });
    }
  };
  return ObjectStore.fromFiles({
    endpoint: c.s3.endpoint,
    bucket: c.s3.bucket,
    ...(c.s3.region && { region: c.s3.region }),
    ...(c.s3.prefix && { prefix: c.s3.prefix }),
    ...(c.s3.caFile && { caFile: c.s3.caFile }),
    credentials: { accessKeyId: read('accessKeyId'), secretAccessKey: read('secretAccessKey') },
  });
}

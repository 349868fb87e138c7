/** The bare cache repository of a git source: creating it and asking what it holds. */
import * as fs from 'node:fs';
import { join } from 'node:path';
import git from 'isomorphic-git';
import { redactUrl } from './ref.ts';

/** initCache creates the bare cache repository of `url` at `gitdir` unless it exists. */
export async function initCache(gitdir: string, url: string): Promise<void> {
  if (fs.existsSync(join(gitdir, 'config'))) return;
  await git.init({ fs, gitdir, bare: true });
  await git.setConfig({ fs, gitdir, path: 'remote.origin.url', value: redactUrl(url) });
  await git.setConfig({ fs, gitdir, path: 'remote.origin.fetch', value: '+refs/heads/*:refs/remotes/origin/*' });
}

/** hasCommit tells whether the cache holds commit `oid`. */
export async function hasCommit(gitdir: string, oid: string): Promise<boolean> {
  try {
    const { type } = await git.readObject({ fs, gitdir, oid, format: 'content' });
    return type === 'commit';
  } catch {
    return false;
  }
}

/** peelToCommit follows annotated tags from `oid` to a commit in the cache, or undefined. */
export async function peelToCommit(gitdir: string, oid: string): Promise<string | undefined> {
  let current = oid;
  for (let i = 0; i < 10; i++) {
    try {
      const { type, object } = await git.readObject({ fs, gitdir, oid: current, format: 'parsed' });
      if (type === 'commit') return current;
      if (type !== 'tag') return undefined;
      current = (object as { object: string }).object;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRegistry, type LocalRegistry } from '../../core/toolchain/registry.ts';

const repo = join(import.meta.dirname, '../..');
const vc = join(repo, 'core/programs/cli/vc.mjs');
const sha = (b: Buffer): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;

/** runVc runs the vc CLI as a user does, with DOCKER_CONFIG pointing at dockerConfig when given. */
function runVc(args: string[], dockerConfig?: string): { status: number | null; stdout: string; stderr: string } {
  const env = { ...process.env, DOCKER_CONFIG: dockerConfig ?? join(dir, 'no-docker-config') };
  return spawnSync(process.execPath, [vc, ...args], { encoding: 'utf8', cwd: repo, env });
}

/** dockerConfig writes a docker config directory whose auths hold user:password for host. */
function dockerConfig(name: string, host: string, user: string, password: string): string {
  const d = join(dir, name);
  mkdirSync(d);
  const auth = Buffer.from(`${user}:${password}`).toString('base64');
  writeFileSync(join(d, 'config.json'), JSON.stringify({ auths: { [host]: { auth } } }));
  return d;
}

/** fetchByDigest reads a manifest or blob straight from the registry API with basic auth (not through vc). */
function fetchRaw(path: string, accept?: string): Promise<{ status: number; body: Buffer; type?: string }> {
  return new Promise((res, rej) => {
    const headers: Record<string, string> = {
      authorization: `Basic ${Buffer.from('alice:s3cret').toString('base64')}`,
      ...(accept ? { accept } : {}),
    };
    const req = request(`${reg.url}${path}`, { ca: reg.caPem, headers }, (r) => {
      const chunks: Buffer[] = [];
      r.on('data', (c: Buffer) => chunks.push(c));
      r.on('end', () =>
        res({ status: r.statusCode ?? 0, body: Buffer.concat(chunks), type: r.headers['content-type'] }),
      );
    });
    req.on('error', rej);
    req.end();
  });
}

let dir: string;
let reg: LocalRegistry;
let archive: string;
let built: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vc-push-'));
  reg = await startRegistry({ users: [{ username: 'alice', password: 's3cret' }] });
  archive = join(dir, 'image.tar');
  const b = runVc(['image', 'build', '--archive', archive]);
  expect(b.status, b.stderr).toBe(0);
  built = b.stdout.trim();
}, 600_000);

afterAll(async () => {
  await reg?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('vc image push', () => {
  it('pushes the built image to a registry with basic auth; the registry serves it back by digest', async () => {
    const ref = `${reg.host}/vc/virtualcluster-ts:0.1.0`;
    const creds = dockerConfig('good', reg.host, 'alice', 's3cret');
    const first = runVc(['image', 'push', ref, '--from', archive, '--ca-file', reg.caFile], creds);
    expect(first.status, first.stderr).toBe(0);
    expect(first.stdout.trim()).toBe(built);
    expect(first.stderr).toContain('2 blobs sent');
    expect(first.stderr).toContain(`${reg.host}/vc/virtualcluster-ts@${built}`);

    const byDigest = await fetchRaw(
      `/v2/vc/virtualcluster-ts/manifests/${built}`,
      'application/vnd.oci.image.manifest.v1+json',
    );
    expect(byDigest.status).toBe(200);
    expect(sha(byDigest.body)).toBe(built);
    expect(byDigest.type).toBe('application/vnd.oci.image.manifest.v1+json');
    const byTag = await fetchRaw(
      '/v2/vc/virtualcluster-ts/manifests/0.1.0',
      'application/vnd.oci.image.manifest.v1+json',
    );
    expect(sha(byTag.body)).toBe(built);
    const manifest = JSON.parse(byDigest.body.toString()) as { layers: Array<{ digest: string; size: number }> };
    const layer = await fetchRaw(`/v2/vc/virtualcluster-ts/blobs/${manifest.layers[0]!.digest}`);
    expect(layer.body.length).toBe(manifest.layers[0]!.size);
    expect(sha(layer.body)).toBe(manifest.layers[0]!.digest);

    // Pushing again sends no blob: the registry has them all.
    const again = runVc(['image', 'push', ref, '--from', archive, '--ca-file', reg.caFile], creds);
    expect(again.status, again.stderr).toBe(0);
    expect(again.stderr).toContain('0 blobs sent (0.0 MiB), 2 already there');
  }, 300_000);

  it('wrong or missing credentials, or an untrusted CA, fail with the registry and the step named', () => {
    const ref = `${reg.host}/vc/other:1`;
    const wrong = runVc(
      ['image', 'push', ref, '--from', archive, '--ca-file', reg.caFile],
      dockerConfig('wrong', reg.host, 'alice', 'nope'),
    );
    expect(wrong.status).toBe(1);
    expect(wrong.stderr).toContain(`registry ${reg.host}`);
    expect(wrong.stderr).toMatch(
      /HEAD \/v2\/vc\/other\/blobs\/sha256:[0-9a-f]{64} refused \(401\) after basic authentication as alice \(from .*wrong\/config\.json auths/,
    );

    const none = runVc(['image', 'push', ref, '--from', archive, '--ca-file', reg.caFile]);
    expect(none.status).toBe(1);
    expect(none.stderr).toContain(`registry ${reg.host}: HEAD /v2/vc/other/blobs/`);
    expect(none.stderr).toContain(`needs basic authentication and there are no credentials for ${reg.host}`);

    const untrusted = runVc(
      ['image', 'push', ref, '--from', archive],
      dockerConfig('good2', reg.host, 'alice', 's3cret'),
    );
    expect(untrusted.status).toBe(1);
    expect(untrusted.stderr).toMatch(new RegExp(`registry ${reg.host.replace(/\./g, '\\.')}: HEAD .*certificate`));
  });
});

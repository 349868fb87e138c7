import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { ApiError, KubeClient } from '../../core/kube/client.ts';
import { packageVersion, setUserAgentComponent } from '../../core/kube/identity.ts';
import { renderSafeKubeconfig } from '../../core/kube/kubeconfig.ts';
import { R } from '../../core/kube/resources.ts';
import { registry } from '../../core/metrics/registry.ts';
import { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { LocalEtcd } from '../../core/dev/local/etcd.ts';
import { ensureToolchain } from '../../core/toolchain/toolchain.ts';
import { eventually } from '../harness.ts';
import { removeStateDir, stateDir } from '../statedirs.ts';

// The credentials of a platform-owned kubeconfig on a real kube-apiserver: a token file that is rewritten under a
// running client, an exec plugin whose credential expires, and the User-Agent and status counts those requests leave
// in the apiserver's audit log and the client's metric.

const NS = 'default';
const USER_AGENT = `virtualcluster-ts-manager/${packageVersion()} (${process.platform}/${process.arch})`;

let dir: string;
let etcd: LocalEtcd;
let cp: LocalControlPlane;
let admin: KubeClient;

beforeAll(async () => {
  await ensureToolchain();
  dir = stateDir('vc-creds-');
  writeFileSync(
    join(dir, 'audit-policy.yaml'),
    stringify({
      apiVersion: 'audit.k8s.io/v1',
      kind: 'Policy',
      omitStages: ['RequestReceived'],
      rules: [{ level: 'Metadata' }],
    }),
  );
  etcd = await LocalEtcd.start({ dir: join(dir, 'etcd') });
  cp = await LocalControlPlane.start({
    name: 'creds',
    dir: join(dir, 'cp'),
    etcd,
    controllerManager: false,
    apiserverExtraArgs: {
      'audit-policy-file': join(dir, 'audit-policy.yaml'),
      'audit-log-path': join(dir, 'audit.log'),
      'audit-log-mode': 'blocking',
    },
  });
  admin = await cp.client();
  setUserAgentComponent('manager');
});

afterAll(async () => {
  await cp?.stop();
  await etcd?.stop();
  if (dir && !process.env.KEEP_STATE) removeStateDir(dir);
});

/** whoami is the user name the apiserver authenticates c as (a SelfSubjectReview, which any user may create). */
async function whoami(c: KubeClient): Promise<string> {
  const r = await c.request<{ status: { userInfo: { username: string } } }>(
    'POST',
    '/apis/authentication.k8s.io/v1/selfsubjectreviews',
    { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } },
  );
  return r.status.userInfo.username;
}

/** serviceAccountToken creates ServiceAccount `name` and returns a token of it from the TokenRequest API. */
async function serviceAccountToken(name: string): Promise<string> {
  await admin.create(R.serviceaccounts, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name, namespace: NS },
  });
  const tr = await admin.request<{ status: { token: string } }>(
    'POST',
    `/api/v1/namespaces/${NS}/serviceaccounts/${name}/token`,
    { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 600 } } },
  );
  return tr.status.token;
}

/** kubeconfig writes a kubeconfig for this apiserver with the given user and returns its path. */
function kubeconfig(name: string, user: Record<string, unknown>): string {
  const path = join(dir, `${name}.kubeconfig`);
  writeFileSync(
    path,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: cp.server, 'certificate-authority': join(cp.dir, 'pki/ca.crt') } }],
      users: [{ name, user }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: name } }],
      'current-context': 'x',
    }),
  );
  return path;
}

/** answers is the value of vc_kube_client_requests_total for one method and code (0 when never counted). */
async function answers(method: string, code: string): Promise<number> {
  const m = await registry.getSingleMetric('vc_kube_client_requests_total')?.get();
  return m?.values.find((v) => v.labels.method === method && v.labels.code === code)?.value ?? 0;
}

interface AuditEvent {
  verb: string;
  userAgent?: string;
  /** the authenticated user; a request refused by authentication (401) has none */
  user: { username?: string };
  objectRef?: { resource?: string };
  responseStatus?: { code?: number };
}
const auditLog = (): AuditEvent[] =>
  readFileSync(join(dir, 'audit.log'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as AuditEvent);

describe('platform kubeconfig credentials on a real apiserver', () => {
  it('follows a rewritten token file without a restart: a 401 re-reads it and the request succeeds as the new user', async () => {
    const tokenA = await serviceAccountToken('sa-a');
    const tokenB = await serviceAccountToken('sa-b');
    // A relative tokenFile, as kubectl reads it: next to the kubeconfig.
    writeFileSync(join(dir, 'sa.token'), `${tokenA}\n`);
    const c = await KubeClient.fromFile(kubeconfig('rotating', { tokenFile: 'sa.token' }));
    try {
      expect(await whoami(c)).toBe(`system:serviceaccount:${NS}:sa-a`);

      // The kubelet's rotation, in the worst order: a new token for another identity, and the old one revoked.
      writeFileSync(join(dir, 'sa.token'), `${tokenB}\n`);
      await admin.delete(R.serviceaccounts, NS, 'sa-a');
      const oldToken = KubeClient.fromSafe({ server: cp.server, caPem: cp.caPem, token: tokenA, context: 'x' });
      try {
        await eventually(async () => {
          const e = await whoami(oldToken).then(
            () => undefined,
            (err: unknown) => err,
          );
          expect(e).toBeInstanceOf(ApiError);
          expect((e as ApiError).code).toBe(401);
        }, 30_000);
      } finally {
        oldToken.close();
      }

      // Well inside the file's one-minute check interval: the client still holds A's token, is refused, re-reads.
      const refusedBefore = await answers('POST', '401');
      expect(await whoami(c)).toBe(`system:serviceaccount:${NS}:sa-b`);
      expect(await answers('POST', '401')).toBe(refusedBefore + 1);
      // And from then on sends B's token at once.
      expect(await whoami(c)).toBe(`system:serviceaccount:${NS}:sa-b`);
      expect(await answers('POST', '401')).toBe(refusedBefore + 1);
    } finally {
      c.close();
    }
  });

  it("runs in-cluster from a Pod's ServiceAccount directory and follows the kubelet's token rotation", async () => {
    // What the kubelet mounts into a Pod, and the variables it sets: here for this apiserver.
    const sa = join(dir, 'serviceaccount');
    mkdirSync(sa);
    writeFileSync(join(sa, 'ca.crt'), cp.caPem);
    writeFileSync(join(sa, 'namespace'), NS);
    writeFileSync(join(sa, 'token'), await serviceAccountToken('sa-pod'));
    const saved = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
    const url = new URL(cp.server);
    process.env.KUBERNETES_SERVICE_HOST = url.hostname;
    process.env.KUBERNETES_SERVICE_PORT = url.port;
    let c: KubeClient | undefined;
    try {
      c = await KubeClient.inCluster({}, sa);
      expect(c.kubeConfig.getContextObject(c.kubeConfig.getCurrentContext())?.namespace).toBe(NS);
      expect(await whoami(c)).toBe(`system:serviceaccount:${NS}:sa-pod`);
      // The kubelet writes a new token (here of another ServiceAccount, so the change shows) and the old one dies.
      writeFileSync(join(sa, 'token'), await serviceAccountToken('sa-pod-next'));
      await admin.delete(R.serviceaccounts, NS, 'sa-pod');
      await eventually(async () => expect(await whoami(c!)).toBe(`system:serviceaccount:${NS}:sa-pod-next`), 30_000);
    } finally {
      c?.close();
      for (const [k, v] of [
        ['KUBERNETES_SERVICE_HOST', saved.host],
        ['KUBERNETES_SERVICE_PORT', saved.port],
      ] as const)
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
    }
  });

  it('runs an exec plugin when first needed, reuses its credential until it expires, then runs it again', async () => {
    const token = await serviceAccountToken('sa-exec');
    writeFileSync(join(dir, 'exec.token'), token);
    const runs = join(dir, 'exec.runs');
    writeFileSync(runs, '');
    const plugin = join(dir, 'plugin.sh');
    writeFileSync(
      plugin,
      [
        '#!/bin/sh',
        'echo run >> "$1"',
        'exp=$(date -u -d "+$EXPIRES_IN seconds" +%Y-%m-%dT%H:%M:%SZ)',
        `printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",` +
          `"status":{"token":"%s","expirationTimestamp":"%s"}}' "$(cat "$2")" "$exp"`,
        '',
      ].join('\n'),
    );
    chmodSync(plugin, 0o755);
    const count = () => readFileSync(runs, 'utf8').split('\n').filter(Boolean).length;
    const c = await KubeClient.fromFile(
      kubeconfig('exec', {
        exec: {
          apiVersion: 'client.authentication.k8s.io/v1',
          command: plugin,
          args: [runs, join(dir, 'exec.token')],
          env: [{ name: 'EXPIRES_IN', value: '3' }],
        },
      }),
    );
    try {
      expect(count()).toBe(0);
      expect(await whoami(c)).toBe(`system:serviceaccount:${NS}:sa-exec`);
      expect(count()).toBe(1);
      expect(await whoami(c)).toBe(`system:serviceaccount:${NS}:sa-exec`);
      expect(count()).toBe(1);
      await new Promise((r) => setTimeout(r, 3_200));
      expect(await whoami(c)).toBe(`system:serviceaccount:${NS}:sa-exec`);
      expect(count()).toBe(2);
    } finally {
      c.close();
    }
  });

  it('names the program in the User-Agent of requests and watches, and counts refusals by code', async () => {
    const token = await serviceAccountToken('sa-ua');
    const c = await KubeClient.fromString(
      renderSafeKubeconfig({ server: cp.server, caPem: cp.caPem, token, context: 'x' }),
      'the test',
    );
    try {
      expect(await whoami(c)).toBe(`system:serviceaccount:${NS}:sa-ua`);
      // The ServiceAccount may not watch ConfigMaps: the watch is refused with 403, and counted.
      const refusedBefore = await answers('WATCH', '403');
      const err = await c
        .watch(R.configmaps, { namespace: NS, timeoutSeconds: 5 }, () => undefined)
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).code).toBe(403);
      expect(await answers('WATCH', '403')).toBe(refusedBefore + 1);
    } finally {
      c.close();
    }
    await eventually(() => {
      const mine = auditLog().filter((e) => e.user.username === `system:serviceaccount:${NS}:sa-ua`);
      const review = mine.find((e) => e.verb === 'create' && e.objectRef?.resource === 'selfsubjectreviews');
      const watch = mine.find((e) => e.verb === 'watch' && e.objectRef?.resource === 'configmaps');
      expect(review?.userAgent).toBe(USER_AGENT);
      expect(watch).toMatchObject({ userAgent: USER_AGENT, responseStatus: { code: 403 } });
    }, 10_000);
    // Every request the ServiceAccounts of this file sent, through token file, exec plugin or inline token, named it.
    const ours = auditLog().filter((e) => (e.user.username ?? '').startsWith(`system:serviceaccount:${NS}:sa-`));
    expect(ours.length).toBeGreaterThan(4);
    expect(new Set(ours.map((e) => e.userAgent))).toEqual(new Set([USER_AGENT]));
  });
});

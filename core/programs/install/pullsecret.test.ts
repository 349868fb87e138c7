import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../kube/client.ts';
import {
  dockerConfigJson,
  exportCredentialsProblem,
  PULL_SECRET,
  pullCredentials,
  withPullSecret,
  withPullSecretRef,
} from './pullsecret.ts';

const LABELS = { 'app.kubernetes.io/managed-by': 'vc-install', 'app.kubernetes.io/version': '1.0.0' };
const ns = (name: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name, labels: { ...LABELS, 'pod-security.kubernetes.io/enforce': 'privileged' } },
});
const workload = (kind: string, namespace: string, pullSecrets?: string[]): KubeObject =>
  ({
    apiVersion: 'apps/v1',
    kind,
    metadata: { name: `w-${namespace}`, namespace, labels: LABELS },
    spec: {
      template: {
        spec: {
          containers: [{ name: 'c', image: 'r.example/vc:1' }],
          ...(pullSecrets && { imagePullSecrets: pullSecrets.map((name) => ({ name })) }),
        },
      },
    },
  }) as KubeObject;
const cm = (namespace: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'x', namespace },
});
const summary = (objs: KubeObject[]) =>
  objs.map((o) => {
    const pod = (o as { spec?: { template?: { spec?: { imagePullSecrets?: Array<{ name: string }> } } } }).spec
      ?.template?.spec;
    const refs = pod?.imagePullSecrets?.map((s) => s.name).join('+');
    return `${o.kind} ${o.metadata?.namespace ?? ''}/${o.metadata?.name}${refs ? ` [${refs}]` : ''}`;
  });

describe('withPullSecret', () => {
  const cases: Array<{ name: string; input: KubeObject[]; want: string[] }> = [
    {
      name: 'a Secret after each namespace with a workload, named by its workloads',
      input: [
        ns('vc-system'),
        ns('vc-vn-agent'),
        cm('vc-system'),
        workload('Deployment', 'vc-system'),
        workload('DaemonSet', 'vc-vn-agent'),
      ],
      want: [
        'Namespace /vc-system',
        `Secret vc-system/${PULL_SECRET}`,
        'Namespace /vc-vn-agent',
        `Secret vc-vn-agent/${PULL_SECRET}`,
        'ConfigMap vc-system/x',
        `Deployment vc-system/w-vc-system [${PULL_SECRET}]`,
        `DaemonSet vc-vn-agent/w-vc-vn-agent [${PULL_SECRET}]`,
      ],
    },
    {
      name: 'no Secret in a namespace without workloads',
      input: [ns('quiet'), cm('quiet')],
      want: ['Namespace /quiet', 'ConfigMap quiet/x'],
    },
    {
      name: "keeps a workload's own pull Secrets and adds it once",
      input: [ns('a'), workload('Deployment', 'a', ['theirs', PULL_SECRET])],
      want: ['Namespace /a', `Secret a/${PULL_SECRET}`, `Deployment a/w-a [theirs+${PULL_SECRET}]`],
    },
    {
      name: 'a workload in a namespace the render does not create: its Secret goes first',
      input: [workload('Deployment', 'platform')],
      want: [`Secret platform/${PULL_SECRET}`, `Deployment platform/w-platform [${PULL_SECRET}]`],
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      const before = structuredClone(c.input);
      expect(summary(withPullSecret(c.input, '{}'))).toEqual(c.want);
      expect(c.input).toEqual(before);
    });

  it('the Secret is a dockerconfigjson with the install labels only, not the namespace Pod Security ones', () => {
    const s = withPullSecret([ns('a'), workload('Deployment', 'a')], '{"auths":{}}')[1] as KubeObject & {
      type: string;
      data: Record<string, string>;
    };
    expect(s.type).toBe('kubernetes.io/dockerconfigjson');
    expect(Buffer.from(s.data['.dockerconfigjson']!, 'base64').toString()).toBe('{"auths":{}}');
    expect(s.metadata?.labels).toEqual(LABELS);
  });

  it('refuses a workload without a namespace or a Pod template, naming it', () => {
    expect(() =>
      withPullSecret([{ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' } }], '{}'),
    ).toThrow(/Deployment or DaemonSet without metadata.namespace/);
    expect(() =>
      withPullSecret([{ apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'd', namespace: 'n' } }], '{}'),
    ).toThrow(/DaemonSet n\/d has no Pod template/);
  });
});

describe('pullCredentials', () => {
  it("reads the image registry's entry of the docker config file into a dockerconfigjson for it alone", () => {
    const dir = mkdtempSync(join(tmpdir(), 'vc-pull-'));
    try {
      const file = join(dir, 'config.json');
      const auth = Buffer.from('alice:s3cret').toString('base64');
      writeFileSync(file, JSON.stringify({ auths: { '127.0.0.1:5000': { auth }, 'other.example': { auth } } }));
      const got = pullCredentials('127.0.0.1:5000/vc/virtualcluster-ts:1', file);
      expect(got.registry).toBe('127.0.0.1:5000');
      expect(JSON.parse(got.config)).toEqual({
        auths: { '127.0.0.1:5000': { username: 'alice', password: 's3cret', auth } },
      });
      expect(got.config).toBe(dockerConfigJson('127.0.0.1:5000', { username: 'alice', password: 's3cret' }));
      expect(() => pullCredentials('third.example/vc:1', file)).toThrow(
        /no credentials for third.example in .*config.json/,
      );
      expect(() => pullCredentials(undefined, file)).toThrow(/give --image/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('withPullSecretRef', () => {
  it('names the Secret in every workload, once, and writes no Secret', () => {
    const input = [ns('a'), cm('a'), workload('Deployment', 'a', ['theirs']), workload('DaemonSet', 'b', ['mine'])];
    const before = structuredClone(input);
    expect(summary(withPullSecretRef(input, 'mine'))).toEqual([
      'Namespace /a',
      'ConfigMap a/x',
      'Deployment a/w-a [theirs+mine]',
      'DaemonSet b/w-b [mine]',
    ]);
    expect(input).toEqual(before);
  });
});

describe('exportCredentialsProblem', () => {
  const cases: Array<{ name: string; o: Parameters<typeof exportCredentialsProblem>[0]; want?: RegExp }> = [
    { name: 'apply with credentials', o: { pullCredentials: true } },
    { name: 'export without credentials', o: { export: true } },
    { name: 'export naming a Secret', o: { export: true, pullSecret: 'regcred' } },
    {
      name: 'export printing credentials, acknowledged',
      o: { export: true, pullCredentials: true, exportCredentials: true },
    },
    {
      name: 'export printing credentials, not acknowledged',
      o: { export: true, pullCredentials: true },
      want: /would print the registry password.*--export-credentials.*--pull-secret NAME/,
    },
    {
      name: 'both pull options',
      o: { pullCredentials: true, pullSecret: 'regcred' },
      want: /exclude each other/,
    },
    {
      name: 'the acknowledgement alone',
      o: { exportCredentials: true, pullCredentials: true },
      want: /only with --export and --pull-credentials/,
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      const got = exportCredentialsProblem(c.o);
      if (c.want) expect(got).toMatch(c.want);
      else expect(got).toBeUndefined();
    });
});

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mergeKubeconfigs, resolveKubeconfig, type ResolveInput } from './kubeconfig.ts';

/** kubeconfig writes a kubeconfig whose clusters are named after their servers' ports, so a test sees which won. */
function kubeconfig(
  path: string,
  o: { current?: string; contexts: Array<[name: string, cluster: string, port: number]> },
): string {
  const lines = ['apiVersion: v1', 'kind: Config', `current-context: "${o.current ?? ''}"`, 'clusters:'];
  for (const [, cluster, port] of o.contexts)
    lines.push(`- name: ${cluster}`, '  cluster:', `    server: https://127.0.0.1:${port}`);
  lines.push('users:', '- name: u', '  user:', '    token: t', 'contexts:');
  for (const [name, cluster] of o.contexts)
    lines.push(`- name: ${name}`, '  context:', `    cluster: ${cluster}`, '    user: u');
  writeFileSync(path, lines.join('\n') + '\n');
  return path;
}

describe('resolveKubeconfig', () => {
  let dir: string;
  let a: string, b: string, home: string, cwd: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'vc-kc-'));
    a = kubeconfig(join(dir, 'a'), { current: 'one', contexts: [['one', 'c1', 1001]] });
    b = kubeconfig(join(dir, 'b'), { current: 'two', contexts: [['two', 'c2', 1002]] });
    home = join(dir, 'home');
    mkdirSync(join(home, '.kube'), { recursive: true });
    kubeconfig(join(home, '.kube/config'), { current: 'h', contexts: [['h', 'ch', 1003]] });
    cwd = join(dir, 'work');
    mkdirSync(join(cwd, '.state/default/clusters/super'), { recursive: true });
    kubeconfig(join(cwd, '.state/default/clusters/super/admin.kubeconfig'), {
      current: 'u',
      contexts: [['u', 'cu', 1004]],
    });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const emptyHome = () => join(dir, 'nohome');
  const cases: Array<[string, () => ResolveInput, string[] | RegExp, string?]> = [
    [
      '--kubeconfig wins over everything',
      () => ({ flag: a, env: { VC_KUBECONFIG: b, KUBECONFIG: b }, home }),
      ['a'],
      '--kubeconfig',
    ],
    [
      'a missing --kubeconfig is an error, not a fallback',
      () => ({ flag: join(dir, 'nope'), env: { KUBECONFIG: b } }),
      /--kubeconfig .*nope: no such file/,
    ],
    [
      'VC_KUBECONFIG before KUBECONFIG',
      () => ({ env: { VC_KUBECONFIG: b, KUBECONFIG: a }, home }),
      ['b'],
      'VC_KUBECONFIG',
    ],
    [
      'KUBECONFIG is a list; missing entries are skipped',
      () => ({ env: { KUBECONFIG: [join(dir, 'gone'), b, '', a].join(delimiter) }, home }),
      ['b', 'a'],
      'KUBECONFIG',
    ],
    [
      '~/.kube/config when KUBECONFIG names nothing that exists',
      () => ({ env: { KUBECONFIG: join(dir, 'gone') }, home }),
      ['config'],
      '~/.kube/config',
    ],
    [
      "vc up's cluster only when nothing else exists and vc up runs",
      () => ({ env: {}, home: emptyHome(), cwd, upRunning: () => true }),
      ['admin.kubeconfig'],
      'vc up',
    ],
    [
      "not vc up's cluster when vc up is not running",
      () => ({ env: {}, home: emptyHome(), cwd, upRunning: () => false }),
      /no kubeconfig: pass --kubeconfig/,
    ],
    [
      "~/.kube/config over a running vc up's",
      () => ({ env: {}, home, cwd, upRunning: () => true }),
      ['config'],
      '~/.kube/config',
    ],
  ];
  it.each(cases)('%s', (_, input, want, source) => {
    if (want instanceof RegExp) {
      expect(() => resolveKubeconfig(input())).toThrow(want);
      return;
    }
    const r = resolveKubeconfig(input());
    expect(r.files.map((f) => f.split('/').pop())).toEqual(want);
    expect(r.source).toBe(source);
  });

  it('merges as kubectl: first file wins per name, first current-context, --context picks another', () => {
    const c = kubeconfig(join(dir, 'c'), {
      current: 'three',
      contexts: [
        ['one', 'c1', 2001],
        ['three', 'c3', 1005],
      ],
    });
    const m = mergeKubeconfigs([a, c]);
    expect(m.currentContext).toBe('one');
    expect(m.getCurrentCluster()?.server).toBe('https://127.0.0.1:1001');
    expect(mergeKubeconfigs([c, a]).currentContext).toBe('three');
    expect(mergeKubeconfigs([c, a], 'one').getCurrentCluster()?.server).toBe('https://127.0.0.1:2001');
    expect(mergeKubeconfigs([a, c], 'three').getCurrentCluster()?.server).toBe('https://127.0.0.1:1005');
    expect(() => mergeKubeconfigs([a, c], 'four')).toThrow(
      /--context four: no such context in .* \(it has: one, three\)/,
    );
  });
});

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  isMinorComplete,
  knownKubernetesVersions,
  kubernetesMinorDir,
  previousKubernetes,
  tenantBinaries,
  UnknownKubernetesVersion,
} from './minors.ts';
import { pinnedVersions } from './toolchain.ts';

describe('tenant binaries by Kubernetes version', () => {
  let root: string;
  let prev: string | undefined;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'vc-minors-'));
    prev = process.env.VC_TOOLCHAIN_CACHE;
    process.env.VC_TOOLCHAIN_CACHE = root;
  });
  afterEach(() => {
    if (prev === undefined) delete process.env.VC_TOOLCHAIN_CACHE;
    else process.env.VC_TOOLCHAIN_CACHE = prev;
    rmSync(root, { recursive: true, force: true });
  });

  it('pins an older minor next to the current one', () => {
    const [cur, old] = knownKubernetesVersions();
    expect(cur).toBe(pinnedVersions().kubernetes);
    expect(old).toBe(previousKubernetes());
    const minor = (v: string) => Number(v.split('.')[1]);
    expect(minor(cur!) - minor(old!)).toBe(1);
  });

  it('refuses a version it has no binaries for, naming the ones it has', () => {
    expect(() => tenantBinaries('v1.36.99')).toThrow(UnknownKubernetesVersion);
    expect(() => tenantBinaries('v1.36.99')).toThrow(new RegExp(knownKubernetesVersions().join(', ')));
  });

  it('says how to build the older minor when it is not built, and finds it once it is', () => {
    const old = previousKubernetes()!;
    expect(() => tenantBinaries(old)).toThrow(/vc toolchain build --previous/);
    const dir = kubernetesMinorDir(old);
    mkdirSync(join(dir, 'bin'), { recursive: true });
    for (const f of ['kube-apiserver', 'kube-controller-manager', '.complete'])
      writeFileSync(join(dir, f === '.complete' ? f : `bin/${f}`), '');
    expect(isMinorComplete(dir)).toBe(true);
    expect(tenantBinaries(old)).toEqual({
      apiserver: join(dir, 'bin/kube-apiserver'),
      controllerManager: join(dir, 'bin/kube-controller-manager'),
    });
  });
});

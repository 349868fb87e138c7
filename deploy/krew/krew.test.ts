import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const root = new URL('../../', import.meta.url);
const manifest = parse(readFileSync(new URL('deploy/krew/vc.yaml', root), 'utf8')) as {
  kind: string;
  metadata: { name: string };
  spec: { version: string; platforms: Array<{ bin: string; uri: string; sha256: string }> };
};
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as {
  version: string;
  bin: Record<string, string>;
};

describe('kubectl vc', () => {
  it('is a bin entry kubectl finds as a plugin, running the same program as vc', () => {
    expect(pkg.bin['kubectl-vc']).toBe(pkg.bin.vc);
  });

  it('has a krew manifest for the package version whose bin is the package entry point', () => {
    expect(manifest.kind).toBe('Plugin');
    expect(manifest.metadata.name).toBe('vc');
    expect(manifest.spec.version).toBe(`v${pkg.version}`);
    for (const p of manifest.spec.platforms) {
      expect(p.bin).toBe(`package/${pkg.bin.vc}`);
      expect(existsSync(new URL(pkg.bin.vc!, root))).toBe(true);
      expect(p.uri).toContain(pkg.version);
      expect(p.sha256).toMatch(/^[0-9a-f]{64}$/);
    }
  });
});

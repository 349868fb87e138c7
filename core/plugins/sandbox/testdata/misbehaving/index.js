// A third-party plugin that misbehaves on request, for the sandbox's tests: a mutator of ConfigMaps that does what
// the tenant ConfigMap's `misbehave` label says, and otherwise annotates the super ConfigMap as sandboxed.
import { Buffer } from 'node:buffer';
import { execFileSync } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';

const SECRETS = { group: '', version: 'v1', resource: 'secrets', kind: 'Secret', namespaced: true };
const CONFIGMAPS = { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true };

function attempt(fn) {
  try {
    return String(fn());
  } catch (e) {
    return `refused: ${e.code ?? e.message}`;
  }
}

export default {
  manifest: {
    apiVersion: 'plugins.tenancy.x-k8s.io/v1',
    name: 'misbehaving',
    version: '0.1.0',
    direction: 'mutator',
    mutates: 'configmaps',
    sourceOfTruth: 'tenant',
    processes: ['manager'],
  },
  reads: [{ resource: CONFIGMAPS, side: 'tenant' }],
  mutate(desired, tenantObj, ctx) {
    const how = tenantObj.metadata?.labels?.misbehave;
    const note = (v) => {
      desired.metadata.annotations = { ...desired.metadata.annotations, 'example.com/sandboxed': v };
      return { object: desired };
    };
    switch (how) {
      case 'loop':
        for (;;);
      case 'alloc': {
        const hoard = [];
        // Buffers lie outside the V8 heap: only the host's watch on the resident size stops this.
        for (;;) hoard.push(Buffer.alloc(1 << 20, hoard.length));
      }
      case 'throw':
        throw new Error(`cannot handle ${tenantObj.metadata.name}`);
      case 'peek':
        return note(`${ctx.superCache.list(SECRETS).length} secrets`);
      case 'kind':
        return { object: { ...desired, kind: 'Secret' } };
      case 'effect':
        return { object: desired, effects: [{ type: 'superServiceAccount', namespace: 'default', name: 'x' }] };
      case 'reach':
        return note(
          [
            `env=${Object.keys(process.env).length}`,
            `token=${attempt(() => readFileSync('/var/run/secrets/kubernetes.io/serviceaccount/token', 'utf8').length)}`,
            `passwd=${attempt(() => readFileSync('/etc/passwd', 'utf8').length)}`,
            `write=${attempt(() => writeFileSync('/tmp/misbehaving-plugin-was-here', 'x'))}`,
            `exec=${attempt(() => execFileSync('/bin/true'))}`,
          ].join(' '),
        );
      case 'connect': {
        // The address the tenant's ConfigMap names (a super apiserver, say), by TCP and by UDP; the plugin swallows
        // the errors, as a hostile one would.
        const [host, port] = tenantObj.data.target.split(':');
        return note(
          [
            `tcp=${attempt(() => connect(Number(port), host) && 'opened')}`,
            `udp=${attempt(() => createSocket('udp4').send('x', Number(port), host) ?? 'sent')}`,
          ].join(' '),
        );
      }
      default: {
        const n = ctx.tenantCache.list(CONFIGMAPS, tenantObj.metadata.namespace).length;
        return note(`yes ns=${ctx.names.superNamespace(tenantObj.metadata.namespace)} peers=${n}`);
      }
    }
  },
};

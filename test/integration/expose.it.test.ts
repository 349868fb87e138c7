import { X509Certificate } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { VirtualClusterController } from '../../core/lifecycle/controller.ts';
import type { ApiServerExpose, VirtualCluster } from '../../core/api/virtualcluster.ts';
import { rootNamespace } from '../../core/names/names.ts';
import { NativeProvisioner } from '../../core/provisioners/native/provisioner.ts';
import {
  PKI_OPTIONS_ANNOTATION,
  PKI_SECRET,
  SERVING_NAMES_ANNOTATION,
} from '../../core/provisioners/native/pkistore.ts';
import { NATIVE_SECRETS } from '../../core/provisioners/native/render.ts';
import { MutableTenantRegistry } from '../../core/tenancy/tenant.ts';
import { eventually, startTestSuper, type TestSuper } from '../harness.ts';

const crdDir = join(import.meta.dirname, '../../deploy/crds');

interface Service extends KubeObject {
  spec: { type: string; ports: Array<{ name: string; port: number; nodePort?: number }> };
  status?: { loadBalancer?: { ingress?: Array<{ ip?: string; hostname?: string }> } };
}
interface Node extends KubeObject {
  status?: { addresses?: Array<{ type: string; address: string }> };
}
interface Secret extends KubeObject {
  data: Record<string, string>;
}

/**
 * spec.apiServer.expose with the native provisioner against a real local super cluster (kwok runs the Pods, so the
 * tenant apiserver never answers: what is checked is what the super cluster holds): the apiserver Service's type and
 * node port, the serving certificate's names (the node addresses, the load balancer's once the test, acting as the
 * provider, writes one into the Service status), only the serving certificate reissued when they change, and the
 * TenantPolicy refusing an exposure it does not allow, in status and an event.
 */
describe('native provisioner: spec.apiServer.expose on a real super cluster', () => {
  let t: TestSuper;
  let native: NativeProvisioner;

  const createVC = (name: string, expose: ApiServerExpose, extra: Record<string, unknown> = {}) =>
    t.client.create<VirtualCluster>(R.virtualclusters, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'VirtualCluster',
      metadata: { name, namespace: 'default' },
      spec: { provisioner: { type: 'native' }, apiServer: { expose }, ...extra },
    });
  const rootOf = (vc: VirtualCluster) => rootNamespace(vc.metadata!.namespace!, vc.metadata!.name!, vc.metadata!.uid!);
  const pem = async (root: string, secret: string) =>
    Buffer.from((await t.client.get<Secret>(R.secrets, root, secret)).data['tls.crt']!, 'base64').toString();
  const sans = async (root: string) =>
    new X509Certificate(await pem(root, NATIVE_SECRETS.apiserver)).subjectAltName!.split(', ').sort();
  const withExpose = (vc: VirtualCluster, expose: ApiServerExpose): VirtualCluster => ({
    ...vc,
    spec: { ...vc.spec, apiServer: { expose } },
  });
  const waitingFor = async (vc: VirtualCluster) => {
    const s = await native.ensure(vc, rootOf(vc));
    expect(s.ready).toBe(false);
    return s.ready ? '' : s.waitingFor;
  };

  beforeAll(async () => {
    t = await startTestSuper({ nodes: 1 });
    for (const f of readdirSync(crdDir).filter((f) => f.endsWith('.yaml'))) {
      for (const d of parseAllDocuments(readFileSync(join(crdDir, f), 'utf8')))
        await t.client.apply(R.crds, d.toJS() as KubeObject, 'test');
    }
    await eventually(() => Promise.all([t.client.list(R.virtualclusters), t.client.list(R.tenantpolicies)]));
    native = new NativeProvisioner(t.client);
    // kwok's nodes have 127.0.0.1, which every serving certificate names anyway: one more Node with addresses of its
    // own (no kwok annotation, so kwok leaves it alone) shows the node addresses going in and out.
    await t.client.create(R.nodes, {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'edge-node-1' },
      status: {
        addresses: [
          { type: 'InternalIP', address: '192.0.2.50' },
          { type: 'ExternalIP', address: '203.0.113.50' },
        ],
      },
    });
  });

  afterAll(async () => {
    await t?.stop();
  });

  it('NodePort: the Service takes the chosen node port, the certificate names every node address', async () => {
    const vc = await createVC('np', { type: 'NodePort', nodePort: 31443, extraDNSNames: ['api.np.example.com'] });
    const root = rootOf(vc);
    expect(await waitingFor(vc)).toMatch(/apiserver/);

    const svc = await t.client.get<Service>(R.services, root, 'apiserver');
    expect(svc.spec.type).toBe('NodePort');
    expect(svc.spec.ports).toMatchObject([{ name: 'https', port: 6443, nodePort: 31443 }]);

    const nodeIPs = (await t.client.list<Node>(R.nodes)).items.flatMap((n) =>
      (n.status?.addresses ?? [])
        .filter((a) => a.type === 'InternalIP' || a.type === 'ExternalIP')
        .map((a) => a.address),
    );
    expect(nodeIPs).toEqual(expect.arrayContaining(['192.0.2.50', '203.0.113.50']));
    const names = await sans(root);
    for (const ip of nodeIPs) expect(names).toContain(`IP Address:${ip}`);
    expect(names).toContain('DNS:api.np.example.com');
    expect(names).toContain(`DNS:apiserver.${root}.svc`);

    // An edit of the extra names reissues only the serving certificate: same CA, same PKI options hash.
    const pki = await t.client.get<Secret>(R.secrets, root, PKI_SECRET);
    const caBefore = await pem(root, NATIVE_SECRETS.ca);
    const edited = withExpose(vc, { type: 'NodePort', nodePort: 31443, extraIPs: ['192.0.2.44'] });
    await waitingFor(edited);
    const after = await sans(root);
    expect(after).toContain('IP Address:192.0.2.44');
    expect(after).not.toContain('DNS:api.np.example.com');
    expect(await pem(root, NATIVE_SECRETS.ca)).toBe(caBefore);
    const pkiAfter = await t.client.get<Secret>(R.secrets, root, PKI_SECRET);
    expect(pkiAfter.metadata?.annotations?.[PKI_OPTIONS_ANNOTATION]).toBe(
      pki.metadata?.annotations?.[PKI_OPTIONS_ANNOTATION],
    );
    expect(pkiAfter.metadata?.annotations?.[SERVING_NAMES_ANNOTATION]).not.toBe(
      pki.metadata?.annotations?.[SERVING_NAMES_ANNOTATION],
    );
    // Reconciling the same spec again writes nothing.
    await waitingFor(edited);
    expect((await t.client.get(R.secrets, root, PKI_SECRET)).metadata?.resourceVersion).toBe(
      pkiAfter.metadata?.resourceVersion,
    );

    // Back to ClusterIP: the node port goes, and so do the node addresses in the certificate.
    await waitingFor(withExpose(vc, { type: 'ClusterIP' }));
    const back = await t.client.get<Service>(R.services, root, 'apiserver');
    expect(back.spec.type).toBe('ClusterIP');
    expect(back.spec.ports[0]!.nodePort).toBeUndefined();
    const plain = await sans(root);
    for (const ip of nodeIPs.filter((x) => x !== '127.0.0.1')) expect(plain).not.toContain(`IP Address:${ip}`);
    expect(await pem(root, NATIVE_SECRETS.ca)).toBe(caBefore);

    await native.remove(vc, root);
    await t.client.delete(R.virtualclusters, 'default', 'np');
  });

  it('LoadBalancer: the certificate names the ingress once the provider writes one into the Service status', async () => {
    const vc = await createVC('lb', { type: 'LoadBalancer' });
    const root = rootOf(vc);
    await waitingFor(vc);
    const svc = await t.client.get<Service>(R.services, root, 'apiserver');
    expect(svc.spec.type).toBe('LoadBalancer');
    expect(await sans(root)).not.toContain('IP Address:198.51.100.7');

    // No load-balancer provider runs here: the test plays it, as a cloud controller would, on the status subresource.
    await t.client.patch(
      R.services,
      root,
      'apiserver',
      { status: { loadBalancer: { ingress: [{ ip: '198.51.100.7' }, { hostname: 'lb.example.com' }] } } },
      'merge',
      { subresource: 'status' },
    );
    await waitingFor(vc);
    const names = await sans(root);
    expect(names).toContain('IP Address:198.51.100.7');
    expect(names).toContain('DNS:lb.example.com');

    await native.remove(vc, root);
    await t.client.delete(R.virtualclusters, 'default', 'lb');
  });

  it('under the controller, refuses an exposure the TenantPolicy does not allow and passes on one it allows', async () => {
    await t.client.create(R.tenantpolicies, {
      apiVersion: 'tenancy.x-k8s.io/v1alpha1',
      kind: 'TenantPolicy',
      metadata: { name: 'nodeport-only' },
      spec: {
        controlPlane: { expose: { allowedTypes: ['NodePort'] } },
        grants: { subjects: [{ kind: 'Namespace', name: 'default' }] },
      },
    });
    const controller = new VirtualClusterController({
      meta: t.client,
      superClient: t.client,
      provisioners: { native },
      tenants: new MutableTenantRegistry(),
    });
    await controller.start();
    try {
      const vc = await createVC('wide', { type: 'LoadBalancer' }, { policyName: 'nodeport-only' });
      const refused = await eventually(async () => {
        const v = await t.client.get<VirtualCluster>(R.virtualclusters, 'default', 'wide');
        expect(v.status?.reason).toBe('PolicyViolation');
        return v;
      }, 30_000);
      const want =
        'VirtualCluster default/wide: spec.apiServer.expose.type: Service type LoadBalancer is not allowed under ' +
        'policy "nodeport-only" (controlPlane.expose.allowedTypes: ClusterIP, NodePort)';
      expect(refused.status?.phase).toBe('Error');
      expect(refused.status?.message).toBe(want);
      expect(refused.status?.conditions?.find((c) => c.type === 'PolicyAccepted')).toMatchObject({
        status: 'False',
        reason: 'PolicyViolation',
        message: want,
      });
      await eventually(async () => {
        const events = await t.client.list<KubeObject & { reason?: string; message?: string; type?: string }>(
          R.events,
          { namespace: 'default', fieldSelector: `involvedObject.uid=${vc.metadata!.uid}` },
        );
        expect(events.items.find((e) => e.reason === 'PolicyViolation')).toMatchObject({
          type: 'Warning',
          message: want,
        });
      }, 30_000);
      // Nothing was provisioned for it.
      expect(await t.client.getOrNull(R.services, rootOf(vc), 'apiserver')).toBeNull();

      // What the policy allows reaches the provisioner: the apiserver Service of an allowed NodePort tenant.
      const ok = await createVC('narrow', { type: 'NodePort' }, { policyName: 'nodeport-only' });
      await eventually(async () => {
        const svc = await t.client.get<Service>(R.services, rootOf(ok), 'apiserver');
        expect(svc.spec.type).toBe('NodePort');
        expect(svc.spec.ports[0]!.nodePort).toBeGreaterThan(0);
      }, 60_000);
      for (const name of ['wide', 'narrow']) await t.client.delete(R.virtualclusters, 'default', name);
      await eventually(async () => {
        for (const name of ['wide', 'narrow'])
          expect(await t.client.getOrNull(R.virtualclusters, 'default', name)).toBeNull();
      }, 90_000);
      expect(await t.client.getOrNull(R.namespaces, undefined, rootOf(ok))).toBeNull();
    } finally {
      await controller.stop();
    }
  });
});

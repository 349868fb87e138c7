/**
 * Hostile tenant Services, Ingresses and Endpoints (issue 12, Services and network): a tenant with cluster-admin on
 * its own apiserver tries to take shared things of the super cluster through the objects the syncer copies: node
 * ports and load balancers beyond its policy or of a class it was not given, another tenant's Ingress host, controller
 * snippets, and Endpoints and EndpointSlices that route a Service to another tenant's Pod or to the super apiserver.
 * Each attempt must leave the super cluster without it and give the tenant a reason it can read (an event, and a
 * VCSynced condition on Services). Runs the real syncer against a real local super cluster and two tenant control
 * planes.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import type { LocalControlPlane } from '../../core/dev/local/controlplane.ts';
import { LABEL, superNamespace } from '../../core/names/names.ts';
import { PluginHost } from '../../core/plugins/host.ts';
import { TENANT_CONTROLLERS } from '../../core/provisioners/native/flags.ts';
import { Syncer } from '../../core/syncer/syncer.ts';
import { MutableTenantRegistry, type Tenant } from '../../core/tenancy/tenant.ts';
import { builtinPlugins } from '../../plugins/registry.ts';
import { eventually, tenantFor } from '../harness.ts';
import { sharedTestSuper, type SharedTestSuper } from '../sharedsuper.ts';
import { Attempts } from './attempts.ts';

interface Service extends KubeObject {
  spec?: { type?: string; clusterIP?: string; ports?: Array<{ port: number; nodePort?: number }> };
  status?: { conditions?: Array<{ type: string; status: string; reason?: string; message?: string }> };
}

interface Event extends KubeObject {
  involvedObject: { name?: string; uid?: string };
  reason?: string;
  message?: string;
}

interface Pod extends KubeObject {
  status?: { podIP?: string };
}

interface Endpoints extends KubeObject {
  subsets?: Array<{ addresses?: Array<{ ip: string }> }>;
}

interface EndpointSlice extends KubeObject {
  endpoints?: Array<{ addresses: string[] }>;
}

const service = (name: string, type: string, selector = true): Service => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: 'default' },
  spec: { type, ports: [{ port: 80 }], ...(selector && { selector: { app: name } }) } as Service['spec'],
});

const ingress = (name: string, host: string | undefined, annotations: Record<string, string> = {}): KubeObject => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: { name, namespace: 'default', annotations },
  spec: {
    ingressClassName: 'nginx',
    rules: [
      {
        ...(host && { host }),
        http: {
          paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } }],
        },
      },
    ],
  },
});

const pod = (name: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default' },
  spec: { containers: [{ name: 'c', image: 'nginx' }] },
});

describe('hostile tenant Services, Ingresses and Endpoints against the services, ingresses and endpoints policy', () => {
  const attempts = new Attempts();
  let t: SharedTestSuper;
  let cpA: LocalControlPlane;
  let cpB: LocalControlPlane;
  let a: KubeClient;
  let b: KubeClient;
  let tenantA: Tenant;
  let tenantB: Tenant;
  let syncer: Syncer;
  let snsA: string;
  let snsB: string;
  let superOfBBefore: string[];

  /** superOfB lists the super Services, Ingresses (with their hosts) and Pods the syncer wrote for tenant B. */
  const superOfB = async (): Promise<string[]> => {
    const out: string[] = [];
    for (const r of [R.services, R.ingresses, R.pods]) {
      for (const o of (await t.client.list(r, { labelSelector: `${LABEL.cluster}=${tenantB.key}` })).items) {
        const hosts = (o as { spec?: { rules?: Array<{ host?: string }> } }).spec?.rules?.map((x) => x.host);
        out.push(`${r.kind}/${o.metadata?.namespace}/${o.metadata?.name}${hosts ? ` ${hosts.join(',')}` : ''}`);
      }
    }
    return out.sort();
  };

  /** warned waits for a Warning event with `reason` on the tenant object with `uid` and returns its message. */
  const warned = async (c: KubeClient, uid: string | undefined, reason: string): Promise<string> =>
    eventually(async () => {
      const e = (await c.list<Event>(R.events, { namespace: 'default' })).items.find(
        (x) => x.involvedObject.uid === uid && x.reason === reason,
      );
      expect(e).toBeDefined();
      return e!.message ?? '';
    });

  /** serviceRefused waits for the tenant-visible refusal of a Service (condition and event) and checks the super. */
  const serviceRefused = async (c: KubeClient, sns: string, name: string, text: string): Promise<string> => {
    const s = await eventually(async () => {
      const got = await c.get<Service>(R.services, 'default', name);
      const cond = got.status?.conditions?.find((x) => x.type === 'VCSynced');
      expect(cond).toMatchObject({ status: 'False', reason: 'ServicePolicyViolation' });
      expect(cond?.message).toContain(text);
      return got;
    });
    const message = await warned(c, s.metadata?.uid, 'ServicePolicyViolation');
    expect(message).toContain(text);
    expect(await t.client.getOrNull(R.services, sns, name)).toBeNull();
    return message;
  };

  beforeAll(async () => {
    t = await sharedTestSuper();
    [cpA, cpB] = await Promise.all([
      t.sc.addControlPlane('tenant-a', { controllers: TENANT_CONTROLLERS }),
      t.sc.addControlPlane('tenant-b', { controllers: TENANT_CONTROLLERS }),
    ]);
    [a, b] = await Promise.all([cpA.client(), cpB.client()]);
    const common = { plugins: { enable: ['ingresses'] }, pluginConfig: { nodes: { vnAgent: { port: 10550 } } } };
    tenantA = tenantFor(cpA, 'team-a', 'a', randomUUID(), {
      ...common,
      services: { nodePort: { allowed: true, max: 1 }, loadBalancer: { allowed: true, max: 1 } },
      ingresses: {
        hosts: ['*.tenant-a.example.com'],
        classes: ['nginx'],
        annotations: ['nginx.ingress.kubernetes.io/rewrite-target'],
      },
    });
    // Tenant B runs under the built-in defaults but for its own Ingress host.
    tenantB = tenantFor(cpB, 'team-b', 'b', randomUUID(), {
      ...common,
      ingresses: { hosts: ['*.tenant-b.example.com'], classes: ['nginx'] },
    });
    snsA = superNamespace(tenantA.key, 'default');
    snsB = superNamespace(tenantB.key, 'default');
    const host = await PluginHost.load({ process: 'manager', builtins: builtinPlugins });
    syncer = new Syncer({
      superClient: t.client,
      host,
      registry: new MutableTenantRegistry([tenantA, tenantB]),
      patrolIntervalMs: 0,
      workers: 4,
    });
    await syncer.start();
    await eventually(() => expect(syncer.tenantReady(tenantA.key) && syncer.tenantReady(tenantB.key)).toBe(true));
    // The other tenant's objects, synced before the attacks: a Pod, a Service and the Ingress of its own host.
    await eventually(() => b.create(R.pods, pod('bystander')));
    await b.create(R.services, service('web', 'ClusterIP'));
    await b.create(R.ingresses, ingress('shop', 'shop.tenant-b.example.com'));
    await eventually(() => a.get(R.serviceaccounts, 'default', 'default'));
    await a.create(R.pods, pod('own'));
    await eventually(async () => {
      expect((await t.client.get<Pod>(R.pods, snsB, 'bystander')).status?.podIP).toBeTruthy();
      expect((await a.get<Pod>(R.pods, 'default', 'own')).status?.podIP).toBeTruthy();
      await t.client.get(R.ingresses, snsB, 'shop');
      await t.client.get(R.services, snsB, 'web');
    }, 90_000);
    superOfBBefore = await superOfB();
  }, 240_000);

  afterAll(async () => {
    attempts.report('services boundary');
    await syncer?.stop();
    await t?.stop();
  });

  it('refuses a NodePort Service of a tenant whose policy allows none, with a reason on the Service', async () => {
    await attempts.attempt('NodePort Service without policy', async () => {
      await b.create(R.services, service('np', 'NodePort'));
      return serviceRefused(b, snsB, 'np', 'services.nodePort.allowed');
    });
  });

  it('refuses a LoadBalancer Service its policy does not allow', async () => {
    await attempts.attempt('LoadBalancer Service without policy', async () => {
      await b.create(R.services, service('lb', 'LoadBalancer'));
      return serviceRefused(b, snsB, 'lb', 'services.loadBalancer.allowed');
    });
  });

  it('keeps the cap when five LoadBalancer Services race for one place', async () => {
    await attempts.attempt('five LoadBalancer Services created at once (max 1)', async () => {
      const burst = ['lb-1', 'lb-2', 'lb-3', 'lb-4', 'lb-5'];
      await Promise.all(burst.map((n) => a.create(R.services, service(n, 'LoadBalancer'))));
      const admitted = await eventually(async () => {
        const lbs = (
          await t.client.list<Service>(R.services, { labelSelector: `${LABEL.cluster}=${tenantA.key}` })
        ).items.filter((x) => x.spec?.type === 'LoadBalancer');
        expect(lbs).toHaveLength(1);
        const refused = [];
        for (const n of burst) {
          const c = (await a.get<Service>(R.services, 'default', n)).status?.conditions?.find(
            (x) => x.type === 'VCSynced' && x.status === 'False',
          );
          if (c) refused.push(c.message ?? '');
        }
        expect(refused).toHaveLength(4);
        return { name: lbs[0]!.metadata?.name, message: refused[0]! };
      });
      expect(admitted.message).toContain('services.loadBalancer.max');
      return `${admitted.name} admitted, the other four refused: ${admitted.message}`;
    });
  });

  it('refuses a NodePort Service over the per-tenant cap, keeping the one within it', async () => {
    await a.create(R.services, service('np-1', 'NodePort'));
    const first = await eventually(async () => {
      const s = await t.client.get<Service>(R.services, snsA, 'np-1');
      expect(s.spec?.type).toBe('NodePort');
      return s;
    });
    await attempts.attempt('NodePort Service over the cap (max 1)', async () => {
      await a.create(R.services, service('np-2', 'NodePort'));
      return serviceRefused(a, snsA, 'np-2', 'services.nodePort.max');
    });
    expect((await t.client.get<Service>(R.services, snsA, 'np-1')).metadata?.uid).toBe(first.metadata?.uid);
    await attempts.attempt('three NodePort Services at once over the cap', async () => {
      const burst = ['np-a', 'np-b', 'np-c'];
      await Promise.all(burst.map((n) => a.create(R.services, service(n, 'NodePort'))));
      const reasons = await Promise.all(burst.map((n) => serviceRefused(a, snsA, n, 'services.nodePort.max')));
      return reasons[0]!;
    });
  });

  it("refuses an Ingress claiming another tenant's host, and one catching every host", async () => {
    await a.create(R.ingresses, ingress('mine', 'web.tenant-a.example.com'));
    await eventually(() => t.client.get(R.ingresses, snsA, 'mine'));
    for (const [what, name, host, field] of [
      ["Ingress for another tenant's host", 'hijack', 'shop.tenant-b.example.com', 'spec.rules[0].host'],
      ['Ingress rule without a host (catch-all)', 'catch-all', undefined, 'spec.rules[0].host'],
    ] as const) {
      await attempts.attempt(what, async () => {
        const created = await a.create(R.ingresses, ingress(name, host));
        const message = await warned(a, created.metadata?.uid, 'IngressPolicyViolation');
        expect(message).toContain(field);
        expect(await t.client.getOrNull(R.ingresses, snsA, name)).toBeNull();
        return message;
      });
    }
  });

  it('keeps snippet annotations off the super Ingress and names them to the tenant', async () => {
    await attempts.attempt('Ingress with server-snippet and configuration-snippet annotations', async () => {
      const created = await a.create(
        R.ingresses,
        ingress('snippet', 'snippet.tenant-a.example.com', {
          'nginx.ingress.kubernetes.io/server-snippet': 'location /steal { proxy_pass https://kubernetes.default; }',
          'nginx.ingress.kubernetes.io/configuration-snippet': 'more_set_headers "X: y";',
          'nginx.ingress.kubernetes.io/rewrite-target': '/',
        }),
      );
      const copy = await eventually(() => t.client.get(R.ingresses, snsA, 'snippet'));
      const keys = Object.keys(copy.metadata?.annotations ?? {});
      expect(keys.filter((k) => k.includes('snippet'))).toEqual([]);
      expect(keys).toContain('nginx.ingress.kubernetes.io/rewrite-target');
      const message = await warned(a, created.metadata?.uid, 'AnnotationsIgnored');
      expect(message).toContain('nginx.ingress.kubernetes.io/server-snippet');
      return message;
    });
  });

  it("keeps another tenant's Pod and the super apiserver out of a selectorless Service's Endpoints", async () => {
    const victimIP = (await t.client.get<Pod>(R.pods, snsB, 'bystander')).status!.podIP!;
    const ownIP = (await a.get<Pod>(R.pods, 'default', 'own')).status!.podIP!;
    const apiserverIP = (await t.client.get<Service>(R.services, 'default', 'kubernetes')).spec!.clusterIP!;
    await a.create(R.services, service('steal', 'ClusterIP', false));
    for (const [what, name, ip] of [
      ["Endpoints at another tenant's super Pod", 'steal', victimIP],
      ['Endpoints at the super apiserver', 'steal-api', apiserverIP],
    ] as const) {
      if (name !== 'steal') await a.create(R.services, service(name, 'ClusterIP', false));
      await attempts.attempt(what, async () => {
        const created = await a.create(R.endpoints, {
          apiVersion: 'v1',
          kind: 'Endpoints',
          metadata: { name, namespace: 'default' },
          subsets: [{ addresses: [{ ip: ownIP }, { ip }], ports: [{ port: 80 }] }],
        });
        // The tenant's own Pod is copied (so the syncer did run), the other address is not.
        const copy = await eventually(async () => {
          const e = await t.client.get<Endpoints>(R.endpoints, snsA, name);
          expect(e.subsets?.flatMap((s) => (s.addresses ?? []).map((x) => x.ip))).toEqual([ownIP]);
          return e;
        });
        expect(JSON.stringify(copy)).not.toContain(`"${ip}"`);
        const message = await warned(a, created.metadata?.uid, 'EndpointAddressesRefused');
        expect(message).toContain(ip);
        return message;
      });
    }
  });

  it("keeps another tenant's Pod and the super apiserver out of a selectorless Service's EndpointSlices", async () => {
    const victimIP = (await t.client.get<Pod>(R.pods, snsB, 'bystander')).status!.podIP!;
    const ownIP = (await a.get<Pod>(R.pods, 'default', 'own')).status!.podIP!;
    const apiserverIP = (await t.client.get<Service>(R.services, 'default', 'kubernetes')).spec!.clusterIP!;
    await a.create(R.services, service('slices', 'ClusterIP', false));
    for (const [what, name, ip] of [
      ["an EndpointSlice at another tenant's super Pod", 'slices-steal', victimIP],
      ['an EndpointSlice at the super apiserver', 'slices-steal-api', apiserverIP],
    ] as const) {
      await attempts.attempt(what, async () => {
        const created = await a.create<EndpointSlice>(R.endpointslices, {
          apiVersion: 'discovery.k8s.io/v1',
          kind: 'EndpointSlice',
          metadata: { name, namespace: 'default', labels: { 'kubernetes.io/service-name': 'slices' } },
          addressType: 'IPv4',
          endpoints: [{ addresses: [ownIP] }, { addresses: [ip] }],
          ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
        });
        // The tenant's own Pod is copied under the Service's name (so kube-proxy routes to it), the other is not.
        const copy = await eventually(async () => {
          const e = await t.client.get<EndpointSlice>(R.endpointslices, snsA, name);
          expect(e.metadata?.labels?.['kubernetes.io/service-name']).toBe('slices');
          expect(e.endpoints?.flatMap((x) => x.addresses)).toEqual([ownIP]);
          return e;
        });
        expect(JSON.stringify(copy)).not.toContain(`"${ip}"`);
        const message = await warned(a, created.metadata?.uid, 'EndpointAddressesRefused');
        expect(message).toContain(ip);
        return message;
      });
    }
  });

  it.each([
    ['the super apiserver', 'to-apiserver', 'kubernetes.default.svc.cluster.local'],
    ["the other tenant's Service by its super name", 'to-other', 'web.SNS_A.svc.cluster.local'],
    ['the node metadata address', 'to-metadata', '169.254.169.254'],
    ['a Pod record spelling the metadata address', 'to-podrecord', '169-254-169-254.default.pod.cluster.local'],
    ['loopback in numeric labels', 'to-numeric', '0x7f.1'],
    ["the cloud's metadata name", 'to-metadata-name', 'metadata.google.internal'],
  ])('refuses an ExternalName Service aliasing %s, with a reason on the Service', async (what, name, target) => {
    await attempts.attempt(`ExternalName Service aliasing ${what}`, async () => {
      const externalName = target.replace('SNS_A', snsA);
      await b.create(R.services, {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name, namespace: 'default' },
        spec: { type: 'ExternalName', externalName },
      });
      return serviceRefused(b, snsB, name, 'spec.externalName');
    });
  });

  it('keeps every ExternalName Service out of the super cluster, so no shared ingress controller follows an alias', async () => {
    // 127.0.0.1.nip.io is a public name that resolves to loopback: no name check can tell it from any other public name,
    // and an answer can change after a check. The shared ingress controller would resolve it and connect from the
    // platform's network; with no super copy there is nothing for it to follow.
    await attempts.attempt('Ingress backed by an ExternalName Service whose public name resolves inward', async () => {
      await a.create(R.services, {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'rebind', namespace: 'default' },
        spec: { type: 'ExternalName', externalName: '127.0.0.1.nip.io' },
      });
      const svc = await eventually(async () => {
        const got = await a.get<Service>(R.services, 'default', 'rebind');
        expect(got.status?.conditions?.find((x) => x.type === 'VCSynced')).toMatchObject({
          status: 'False',
          reason: 'TenantOnly',
        });
        return got;
      });
      const ing = ingress('rebind', 'rebind.tenant-a.example.com');
      (
        ing.spec as { rules: Array<{ http: { paths: Array<{ backend: { service: { name: string } } }> } }> }
      ).rules[0]!.http.paths[0]!.backend.service.name = 'rebind';
      const created = await a.create(R.ingresses, ing);
      const message = await warned(a, created.metadata?.uid, 'IngressPolicyViolation');
      expect(message).toContain('backend.service.name: Service "rebind" is an ExternalName Service');
      expect(await t.client.getOrNull(R.services, snsA, 'rebind')).toBeNull();
      expect(await t.client.getOrNull(R.ingresses, snsA, 'rebind')).toBeNull();
      return `${svc.status?.conditions?.find((x) => x.type === 'VCSynced')?.message}; ${message}`;
    });
  });

  it('deletes the super copy of a backend Service changed to ExternalName after its Ingress was synced', async () => {
    await attempts.attempt('ClusterIP backend turned into an ExternalName alias under a synced Ingress', async () => {
      await a.create(R.services, service('turncoat', 'ClusterIP'));
      const ing = ingress('turncoat', 'turncoat.tenant-a.example.com');
      (
        ing.spec as { rules: Array<{ http: { paths: Array<{ backend: { service: { name: string } } }> } }> }
      ).rules[0]!.http.paths[0]!.backend.service.name = 'turncoat';
      await a.create(R.ingresses, ing);
      await eventually(async () => {
        await t.client.get(R.ingresses, snsA, 'turncoat');
        await t.client.get(R.services, snsA, 'turncoat');
      });
      await a.patch(
        R.services,
        'default',
        'turncoat',
        { spec: { type: 'ExternalName', externalName: 'kubernetes.default', selector: null, ports: null } },
        'merge',
      );
      await eventually(async () => expect(await t.client.getOrNull(R.services, snsA, 'turncoat')).toBeNull());
      return 'the super Service is gone: the synced Ingress names a backend that does not exist in the super cluster';
    });
  });

  it('refuses a LoadBalancer Service naming a load balancer class its policy does not list', async () => {
    await attempts.attempt('LoadBalancer Service choosing an internal load balancer class', async () => {
      // A class picks the controller that gives the Service its address: one handing out the platform's own network
      // would put the tenant's Pods on it. Tenant A may have LoadBalancer Services, but lists no class.
      await a.create(R.services, {
        ...service('lb-internal', 'LoadBalancer'),
        spec: { ...service('lb-internal', 'LoadBalancer').spec, loadBalancerClass: 'internal.example.com/lb' },
      } as Service);
      return serviceRefused(a, snsA, 'lb-internal', 'spec.loadBalancerClass "internal.example.com/lb" is not allowed');
    });
  });

  it('refuses a NodePort Service with more ports than its policy allows one Service', async () => {
    await attempts.attempt(
      'NodePort Service with 6 ports (maxPorts 5): node ports are shared by all tenants',
      async () => {
        // The count cap alone would let one tenant's few Services hold the whole node port range of every node.
        const ports = [1, 2, 3, 4, 5, 6].map((i) => ({ name: `p${i}`, port: 8000 + i }));
        await a.create(R.services, { ...service('np-wide', 'NodePort'), spec: { type: 'NodePort', ports } } as Service);
        return serviceRefused(a, snsA, 'np-wide', 'spec.ports: 6 ports');
      },
    );
  });

  it('refuses a Service claiming addresses of the shared network by name, instead of copying it without them', async () => {
    const bystander = (await t.client.get<Pod>(R.pods, snsB, 'bystander')).status?.podIP ?? '';
    for (const [what, name, spec, field] of [
      [
        "Service with externalIPs naming another tenant's Pod address",
        'capture-ext',
        { externalIPs: [bystander] },
        'spec.externalIPs',
      ],
      [
        'LoadBalancer Service asking for a loadBalancerIP',
        'capture-lb',
        { loadBalancerIP: '203.0.113.9' },
        'spec.loadBalancerIP',
      ],
    ] as const) {
      await attempts.attempt(what, async () => {
        const type = field === 'spec.loadBalancerIP' ? 'LoadBalancer' : 'ClusterIP';
        const svc = service(name, type);
        await a.create(R.services, { ...svc, spec: { ...svc.spec, ...spec } } as Service);
        return serviceRefused(a, snsA, name, field);
      });
    }
  });

  it("changed nothing of the other tenant's super objects, and counts every attempt refused", async () => {
    expect(await superOfB()).toEqual(superOfBBefore);
    const services = (await t.client.list<Service>(R.services, { labelSelector: `${LABEL.cluster}=${tenantA.key}` }))
      .items;
    expect(services.filter((s) => s.spec?.type === 'NodePort').map((s) => s.metadata?.name)).toEqual(['np-1']);
    expect(services.filter((s) => s.spec?.type === 'LoadBalancer')).toHaveLength(1);
    const ingresses = (await t.client.list(R.ingresses, { labelSelector: `${LABEL.cluster}=${tenantA.key}` })).items;
    // turncoat was synced before its backend became an ExternalName Service: it stays, naming a Service the super
    // cluster no longer has, and no ExternalName Service of the tenant is in the super at all
    expect(ingresses.map((i) => i.metadata?.name).sort()).toEqual(['mine', 'snippet', 'turncoat']);
    expect(services.filter((s) => s.spec?.type === 'ExternalName')).toEqual([]);
    expect(attempts.summary()).toBe('attempts 24, refused 24, succeeded 0');
  });
});

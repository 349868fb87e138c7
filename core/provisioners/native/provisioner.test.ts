import { describe, expect, it } from 'vitest';
import { validate } from '../../../schemas/validate.ts';
import { generateControlPlanePKI } from '../../pki/pki.ts';
import type { KubeClient, KubeObject } from '../../kube/client.ts';
import { NODE_IMAGES } from '../../toolchain/node.ts';
import { nativePKIOptions, renderNative } from './render.ts';
import { defaultClusterVersion, NativeProvisioner, type ApiAccess } from './provisioner.ts';
import type { VirtualCluster } from '../../api/virtualcluster.ts';

const vc = (spec: VirtualCluster['spec'] = {}): VirtualCluster => ({
  apiVersion: 'tenancy.x-k8s.io/v1alpha1',
  kind: 'VirtualCluster',
  metadata: { name: 'dev', namespace: 'team-a', uid: 'u1' },
  spec,
});

describe('native provisioner helpers', () => {
  it('gives a default ClusterVersion the schema accepts', () => {
    expect(validate('clusterVersion', defaultClusterVersion())).toEqual([]);
    expect(defaultClusterVersion().spec.kubernetesVersion).toMatch(/^v\d+\.\d+\.\d+/);
  });

  it('names in its default ClusterVersion exactly the control-plane images a real node has', async () => {
    const objs = renderNative({
      vc: vc(),
      clusterVersion: defaultClusterVersion(),
      pki: await generateControlPlanePKI(nativePKIOptions(vc(), 'root')),
      rootNamespace: 'root',
    }).filter((o) => o.kind === 'StatefulSet') as Array<
      KubeObject & { spec: { template: { spec: { containers: Array<{ image: string }> } } } }
    >;
    expect(new Set(objs.map((o) => o.spec.template.spec.containers[0]!.image))).toEqual(
      new Set([NODE_IMAGES.etcd, NODE_IMAGES['kube-apiserver'], NODE_IMAGES['kube-controller-manager']]),
    );
  });

  it('refuses an apiserver access it does not know and a relative etcd directory, naming the field', () => {
    const client = {} as KubeClient;
    expect(() => new NativeProvisioner(client, { apiserverAccess: 'NodePort' as ApiAccess })).toThrow(
      'native provisioner: apiserverAccess NodePort is not one of ServiceName, ClusterIP',
    );
    expect(() => new NativeProvisioner(client, { etcdHostPathDir: 'native' })).toThrow(
      'native provisioner: etcdHostPathDir native is not an absolute path',
    );
  });
});

// The at-caps tenant's writer, as a process of its own (see atCapsFill in atcaps.ts): the tenant's own client builds
// and sends 80 MiB of ConfigMaps, which on the bench's main thread would take the syncer's event loop from it.
// argv: kubeconfig, ConfigMap count, characters each, creates in flight. Prints `writing` once its first ConfigMap
// is created, then `cpu <seconds>`; exits 1 with the error.
import { setPriority } from 'node:os';
import { KubeClient, type KubeObject } from '../../core/kube/client.ts';
import { R } from '../../core/kube/resources.ts';
import { pool } from './podwatch.ts';

const [kubeconfig, count, chars, inFlight] = process.argv.slice(2);
// a tenant's client, at the default priority whatever the bench's thread that started it runs at
setPriority(0);
const client = await KubeClient.fromFile(kubeconfig!);
try {
  const blob = 'x'.repeat(Number(chars));
  let announced = false;
  const names = Array.from({ length: Number(count) }, (_, i) => `fill-${i}`);
  await pool(names, Number(inFlight), async (name) => {
    const cm: KubeObject = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { namespace: 'default', name },
      data: { blob },
    };
    await client.create(R.configmaps, cm);
    if (!announced) process.stdout.write('writing\n');
    announced = true;
  });
} catch (e) {
  process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
} finally {
  client.close();
  const cpu = process.cpuUsage();
  process.stdout.write(`cpu ${(cpu.user + cpu.system) / 1e6}\n`);
}

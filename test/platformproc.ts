/**
 * A platform process for test/integration/cpulimit.it.test.ts: it enters its PlatformCgroup (as `vc up` does before
 * its manager starts), starts a child and hands it back (as the bench does with a tenant's client), prints one JSON
 * line {dir, child} and, on a line `leave` on stdin, stops the child, leaves the cgroup and prints `left`.
 */
import { spawn } from 'node:child_process';
import { platformCgroup } from '../core/dev/local/cpulimit.ts';

const out = platformCgroup();
if ('unavailable' in out) {
  process.stdout.write(`${JSON.stringify({ unavailable: out.unavailable })}\n`);
  process.exit(1);
}
const child = spawn('sleep', ['600'], { stdio: 'ignore' });
out.cgroup.release(child.pid!);
process.stdout.write(`${JSON.stringify({ dir: out.cgroup.dir, child: child.pid })}\n`);
process.stdin.on('data', (d: Buffer) => {
  if (!d.toString().includes('leave')) return;
  child.once('exit', async () => {
    await out.cgroup.leave();
    process.stdout.write('left\n');
    process.exit(0);
  });
  child.kill();
});

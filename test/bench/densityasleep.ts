import { execFile } from 'node:child_process';
import { readFileSync, statfsSync } from 'node:fs';
import { promisify } from 'node:util';
import { FrontDoor } from '../../core/dev/local/frontdoor.ts';

const exec = promisify(execFile);
const MiB = 1024 * 1024;

/**
 * AsleepFootprint is what a sleeping tenant still holds, and how many sleeping tenants this host has room for by each
 * of those (the smallest of them is the answer).
 */
export interface AsleepFootprint {
  /** blocks its state directory (PKI, kubeconfigs, its etcd's data and write-ahead log) takes on disk, MiB */
  diskMiB: number;
  /** the manager's resident memory per front door, measured over `doors` doors opened at once, KiB */
  managerKiB: number;
  doors: number;
  /** file descriptors and loopback ports: one listening socket each */
  fdsPerTenant: number;
  fit: { disk: number; memory: number; fds: number; ports: number };
}

/** diskBytes is the space dir's files take on disk (du's blocks, not their apparent size). */
async function diskBytes(dir: string): Promise<number> {
  const { stdout } = await exec('du', ['-s', '--block-size=1', dir]);
  return Number(stdout.split(/\s/)[0]);
}

/** openFilesLimit is this process's soft limit of open files (/proc/self/limits). */
function openFilesLimit(): number {
  const line = readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Max open files'));
  const soft = line?.split(/\s{2,}/)[1];
  return soft === undefined || soft === 'unlimited' ? Infinity : Number(soft);
}

/**
 * managerBytesPerDoor opens `doors` front doors in this process, as the manager keeps one per sleeping tenant (each
 * upstream refuses: nothing connects), and answers the growth of the resident set per door, after a settle; they are
 * closed again before it returns.
 */
async function managerBytesPerDoor(doors: number): Promise<number> {
  const settle = () => new Promise((r) => setTimeout(r, 1000));
  await settle();
  const before = process.memoryUsage().rss;
  const open: FrontDoor[] = [];
  try {
    for (let i = 0; i < doors; i++)
      open.push(
        await FrontDoor.start({
          host: '127.0.0.1',
          port: 0,
          activeSinceMs: 0,
          upstream: () => Promise.reject(new Error('asleep')),
        }),
      );
    await settle();
    return (process.memoryUsage().rss - before) / doors;
  } finally {
    await Promise.all(open.map((d) => d.stop()));
  }
}

/**
 * asleepFootprint measures what the sleeping tenants with state directories dirs hold (the mean of their disk) and
 * the manager's memory per front door over `doors` doors; fit is how many sleeping tenants the free disk of their
 * file system, this host's available memory, this process's open-files limit and the ephemeral port range (one
 * listening port each) have room for.
 */
export async function asleepFootprint(dirs: readonly string[], doors: number): Promise<AsleepFootprint> {
  const disk = (await Promise.all(dirs.map(diskBytes))).reduce((a, b) => a + b, 0) / dirs.length;
  const perDoor = await managerBytesPerDoor(doors);
  const fs = statfsSync(dirs[0]!);
  const available = Number(/MemAvailable:\s+(\d+) kB/.exec(readFileSync('/proc/meminfo', 'utf8'))?.[1] ?? 0) * 1024;
  const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
  return {
    diskMiB: disk / MiB,
    managerKiB: perDoor / 1024,
    doors,
    fdsPerTenant: 1,
    fit: {
      disk: Math.floor((fs.bavail * fs.bsize) / disk),
      memory: perDoor > 0 ? Math.floor(available / perDoor) : Infinity,
      fds: openFilesLimit(),
      // A front door listens on a port the kernel picks (port 0), from the ephemeral range outgoing connections share.
      ports: high! - low! + 1,
    },
  };
}

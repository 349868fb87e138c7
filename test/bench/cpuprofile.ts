import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

/** CpuProfile is a running V8 CPU profile of this process's main thread. */
export interface CpuProfile {
  /** stop ends the profile and writes it (Chrome DevTools' .cpuprofile format) to the path it was started with */
  stop(): Promise<void>;
}

/**
 * startCpuProfile profiles this process's main thread (the syncer's, in the benches that run it in-process) until
 * stopped, sampling every `intervalUs` microseconds, for the file `path`. Open the file in Chrome DevTools or speedscope to see where the
 * thread's time went during one phase, not a whole run.
 */
export async function startCpuProfile(path: string, intervalUs = 1000): Promise<CpuProfile> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: intervalUs });
  await session.post('Profiler.start');
  return {
    async stop() {
      try {
        const { profile } = await session.post('Profiler.stop');
        writeFileSync(path, JSON.stringify(profile));
      } finally {
        session.disconnect();
      }
    },
  };
}

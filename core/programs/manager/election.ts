// Leadership terms of a manager process: what runs while it holds its Lease.

import type { KubeClient } from '../../kube/client.ts';
import { LeaderElector } from '../../leader/election.ts';
import { holderGone, localIdentity } from '../../leader/local.ts';
import { childLogger } from '../../log.ts';
import type { SyncerTerm } from '../../syncer/options.ts';
import type { ManagerConfig } from './config.ts';

const log = childLogger({ controller: 'manager' });

/** Terms are what the election starts while this process leads and halts when it stops leading. */
export interface Terms {
  start(t: SyncerTerm): Promise<void>;
  halt(): Promise<void>;
}

/** Election is a running election; stop ends it and waits for the last term to have halted. */
export interface Election {
  stop(): Promise<void>;
}

/**
 * elect stands for the Lease until stopped and runs a term each time it wins: the terms run one after another, so a
 * new term never starts controllers while the last one still stops them.
 */
export function elect(
  client: KubeClient,
  lease: { namespace: string; name: string },
  timing: Pick<
    NonNullable<ManagerConfig['leaderElection']>,
    'leaseDurationSeconds' | 'renewDeadlineSeconds' | 'retryPeriodSeconds'
  >,
  terms: Terms,
): Election {
  const stopElection = new AbortController();
  let lastTerm = Promise.resolve();
  const elector = new LeaderElector({
    client,
    namespace: lease.namespace,
    name: lease.name,
    identity: localIdentity(),
    holderGone: (id) => holderGone(id),
    leaseDurationSeconds: timing.leaseDurationSeconds,
    renewDeadlineSeconds: timing.renewDeadlineSeconds,
    retryPeriodSeconds: timing.retryPeriodSeconds,
    onStartedLeading: async (signal) => {
      // A lost lease does not wait for its term to halt before standing again: the next term waits for it instead.
      const previous = lastTerm;
      let ended = () => {};
      lastTerm = new Promise<void>((res) => (ended = res));
      try {
        await previous;
        if (signal.aborted) return;
        log.info('became leader; starting syncers');
        try {
          await terms.start({ signal, holds: () => elector.holds() });
          // Leadership can end while start() still runs (a slow cache sync): then the signal is already aborted
          // and no abort event will come, so wait only for one that has not happened yet.
          if (!signal.aborted)
            await new Promise<void>((res) => signal.addEventListener('abort', () => res(), { once: true }));
        } finally {
          // Also after a start() that failed halfway: what it started (syncers' informers and tenant clients)
          // would otherwise keep their connections, and the next term would replace the only references to it.
          await terms.halt();
        }
      } finally {
        ended();
      }
    },
    onStoppedLeading: () => log.info('stopped leading'),
  });
  const running = (async () => {
    while (!stopElection.signal.aborted) await elector.run(stopElection.signal);
  })();
  return {
    stop: async () => {
      stopElection.abort();
      await running;
      await lastTerm;
    },
  };
}

import { nextCondition, type Condition, type ConditionStatus } from '../../core/controller/status.ts';
import type { GitSourceStatus } from './gitsource.ts';
import type { InventoryEntry } from './objects.ts';

/** REASONS are the reasons of the conditions the applier writes. */
export const REASONS = [
  'Succeeded',
  'ParseFailed',
  'ValidationFailed',
  'OutOfScope',
  'NotOwned',
  'EmptyPath',
  'DeletionLimitExceeded',
  'ApplyFailed',
  'WaveNotHealthy',
  'PruneFailed',
] as const;
/** Reason is one of REASONS. */
export type Reason = (typeof REASONS)[number];

/** Stop is why a reconcile ended early: the first step that failed. */
export interface Stop {
  reason: Exclude<Reason, 'Succeeded'>;
  message: string;
  /** true when retrying the same revision cannot help: a new revision or a human decision is needed */
  stalled: boolean;
}

/** StatusInput is everything the status of one reconcile is computed from. */
export interface StatusInput {
  previous: GitSourceStatus | undefined;
  revision: string;
  digest: string;
  inventory: readonly InventoryEntry[];
  /** absent when every step succeeded */
  stop?: Stop;
  generation?: number;
  /** the confirmation annotation value that allowed this reconcile's deletions */
  confirmationUsed?: string;
  now: Date;
}

/** MAX_MESSAGE is the longest condition message written, below the schema's 32768. */
export const MAX_MESSAGE = 32_000;

function clip(message: string): string {
  return message.length <= MAX_MESSAGE ? message : `${message.slice(0, MAX_MESSAGE - 16)}… (truncated)`;
}

function condition(
  previous: readonly Condition[],
  type: string,
  status: ConditionStatus,
  reason: string,
  message: string,
  now: Date,
  generation?: number,
): Condition {
  return nextCondition(
    previous,
    {
      type,
      status,
      reason,
      message: clip(message),
      ...(generation === undefined ? {} : { observedGeneration: generation }),
    },
    now,
  );
}

/**
 * computeStatus is the GitSource status after one reconcile: Ready, Reconciling and Stalled (all three always
 * present), lastAttemptedRevision always, lastAppliedRevision only when no step stopped the reconcile (every object
 * applied and pruning allowed and done), the new inventory, and the artifact. Fields it does not own (those of the
 * source, such as other conditions) are kept from the previous status.
 */
export function computeStatus(i: StatusInput): GitSourceStatus {
  const prev = i.previous ?? {};
  const before = prev.conditions ?? [];
  const own = new Set(['Ready', 'Reconciling', 'Stalled']);
  const s = i.stop;
  const okMessage = `Applied revision ${i.revision}: ${i.inventory.length} object${i.inventory.length === 1 ? '' : 's'} in the inventory`;
  const conditions: Condition[] = [
    ...before.filter((c) => !own.has(c.type)),
    s
      ? condition(before, 'Ready', 'False', s.reason, s.message, i.now, i.generation)
      : condition(before, 'Ready', 'True', 'Succeeded', okMessage, i.now, i.generation),
    s && !s.stalled
      ? condition(
          before,
          'Reconciling',
          'True',
          s.reason,
          `Retrying revision ${i.revision}: ${s.message}`,
          i.now,
          i.generation,
        )
      : condition(
          before,
          'Reconciling',
          'False',
          s?.reason ?? 'Succeeded',
          s ? 'Waiting for a new revision or a decision' : okMessage,
          i.now,
          i.generation,
        ),
    s?.stalled
      ? condition(before, 'Stalled', 'True', s.reason, s.message, i.now, i.generation)
      : condition(
          before,
          'Stalled',
          'False',
          s?.reason ?? 'Succeeded',
          s ? 'The failure may pass on retry' : okMessage,
          i.now,
          i.generation,
        ),
  ];
  const out: GitSourceStatus = {
    ...prev,
    conditions,
    lastAttemptedRevision: i.revision,
    artifact: { revision: i.revision, digest: i.digest },
    inventory: [...i.inventory],
  };
  if (!s) out.lastAppliedRevision = i.revision;
  if (i.confirmationUsed) out.lastHandledConfirmation = i.confirmationUsed;
  if (i.generation !== undefined) out.observedGeneration = i.generation;
  return out;
}

import {
  clone,
  type Decision,
  type KubeObject,
  type ObjectReference,
  PLUGIN_API_VERSION,
  provenanceOf,
  R,
  type ResourcePlugin,
} from '@virtualcluster-ts/plugin-sdk';

/** InvolvedObject is the object a core/v1 Event is about. */
export type InvolvedObject = ObjectReference;

/** Event is a core/v1 Event as the events plugin sees it. */
export interface Event extends KubeObject {
  involvedObject?: InvolvedObject;
  series?: { count?: number; lastObservedTime?: string };
}

/** EVENT_KINDS are the kinds of involved objects whose super events are copied to the tenant, with their resource. */
export const EVENT_KINDS = { Pod: R.pods, Service: R.services } as const;

/**
 * SAID_BY_THE_OBJECT are the super events, by involved kind and reason, that are not copied: the tenant object already
 * says the same in its own fields, and a copy would be one more tenant write per object for nothing. The scheduler's
 * `Scheduled` on a Pod: the syncer's Binding gives the tenant Pod its node (spec.nodeName) and PodScheduled=True with
 * the time; the super event's message would also name the super namespace and the real node, not the tenant's.
 */
export const SAID_BY_THE_OBJECT: ReadonlyArray<{ kind: keyof typeof EVENT_KINDS; reason: string }> = [
  { kind: 'Pod', reason: 'Scheduled' },
];

/** saidByTheObject tells whether a super event is one of SAID_BY_THE_OBJECT, which the plugin does not copy. */
export function saidByTheObject(e: Event): boolean {
  return SAID_BY_THE_OBJECT.some((x) => x.kind === e.involvedObject?.kind && x.reason === e.reason);
}

/** COPIED_FIELDS are the Event fields copied as they are from the super event. */
export const COPIED_FIELDS = [
  'reason',
  'message',
  'type',
  'count',
  'firstTimestamp',
  'lastTimestamp',
  'eventTime',
  'source',
  'reportingComponent',
  'reportingInstance',
  'action',
] as const;

/**
 * INVOLVED_WAIT bounds how an event waits for its involved object to reach the super cache (the Pods and Events
 * watches are separate streams, and under load a Pod's event may come first): it is planned again after its age,
 * between `firstMs` and `maxMs`, so the delays double; once it was last seen more than `giveUpMs` ago it no longer
 * asks to be requeued (its object was deleted, or is not one the syncer wrote), and only the patrol plans it again.
 */
export const INVOLVED_WAIT = { firstMs: 200, maxMs: 10_000, giveUpMs: 60_000 } as const;

/** lastSeen is the latest time a super event says it was observed, in ms, or undefined when it says none. */
export function lastSeen(e: Event): number | undefined {
  const times = [e.metadata?.creationTimestamp, e.lastTimestamp, e.eventTime, e.series?.lastObservedTime]
    .map((t) => (typeof t === 'string' ? Date.parse(t) : Number.NaN))
    .filter((t) => !Number.isNaN(t));
  return times.length ? Math.max(...times) : undefined;
}

/**
 * waitFor is the decision on an event whose involved object is not in the super cache, or is another incarnation
 * of it: skipped, and requeued while the event is recent (INVOLVED_WAIT).
 */
function waitFor(superEvent: Event, io: InvolvedObject, now: Date): Decision<Event> {
  const seen = lastSeen(superEvent);
  const age = seen === undefined ? Number.POSITIVE_INFINITY : now.getTime() - seen;
  const what = `${io.kind} ${io.namespace}/${io.name}${io.uid ? ` (uid ${io.uid})` : ''}`;
  if (age > INVOLVED_WAIT.giveUpMs)
    return {
      object: null,
      skip: {
        reason: 'InvolvedObjectUnknown',
        message: `${what} is not in the super cache a minute after the event (deleted, or not the syncer's)`,
      },
    };
  return {
    object: null,
    skip: { reason: 'WaitingForInvolvedObject', message: `${what} is not in the super cache yet` },
    requeueAfterMs: Math.min(Math.max(age, INVOLVED_WAIT.firstMs), INVOLVED_WAIT.maxMs),
  };
}

const kindOf = (e: Event): keyof typeof EVENT_KINDS | undefined => {
  const k = e.involvedObject?.kind;
  return k !== undefined && Object.hasOwn(EVENT_KINDS, k) ? (k as keyof typeof EVENT_KINDS) : undefined;
};

/**
 * eventsPlugin copies super events about a tenant's Pods and Services to the tenant, once (create-only), with the
 * involved object rewritten to the tenant object; not those the tenant object already says (SAID_BY_THE_OBJECT).
 * Events about super objects the syncer did not write for this tenant are dropped; one whose object is not in the
 * super cache yet (or only another incarnation of it) waits for it (INVOLVED_WAIT).
 */
export const eventsPlugin: ResourcePlugin<Event> = {
  manifest: {
    apiVersion: PLUGIN_API_VERSION,
    name: 'events',
    version: '0.1.0',
    description: "Super events about a tenant's Pods and Services, copied once to the tenant",
    resource: { ...R.events },
    direction: 'up',
    sourceOfTruth: 'super',
    processes: ['manager'],
  },
  reads: Object.values(EVENT_KINDS).map((resource) => ({ resource, side: 'super' as const })),

  route(superEvent, rctx) {
    const io = superEvent.involvedObject;
    if (!kindOf(superEvent) || !io?.namespace || saidByTheObject(superEvent)) return [];
    const owner = rctx.tenantOfNamespace(io.namespace);
    return owner ? [{ tenant: owner.tenant, namespace: owner.namespace, name: superEvent.metadata?.name ?? '' }] : [];
  },

  toTenant(superEvent, tenantEvent, ctx) {
    if (tenantEvent) return { object: tenantEvent };
    if (superEvent && saidByTheObject(superEvent)) return { object: null };
    const kind = superEvent && kindOf(superEvent);
    const io = superEvent?.involvedObject;
    if (!superEvent || !kind || !io?.namespace || !io.name) return { object: null };
    const involved = ctx.superCache.get(EVENT_KINDS[kind], io.namespace, io.name);
    // Not in the cache yet, or the cache still holds another incarnation: the object may be on its way.
    if (!involved || (io.uid && involved.metadata?.uid && io.uid !== involved.metadata.uid))
      return waitFor(superEvent, io, ctx.now);
    const p = provenanceOf(involved);
    if (!p || p.cluster !== ctx.tenant.key || !p.uid) return { object: null };
    const tenantNs = p.namespace || ctx.names.tenantNamespace(io.namespace);
    if (!tenantNs) return { object: null };
    const involvedObject: InvolvedObject = { ...clone(io), namespace: tenantNs, name: p.name || io.name, uid: p.uid };
    delete involvedObject.resourceVersion;
    const out: Event = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: superEvent.metadata?.name ?? '', namespace: tenantNs },
      involvedObject,
    };
    for (const f of COPIED_FIELDS) if (superEvent[f] !== undefined) out[f] = clone(superEvent[f]);
    return { object: out };
  },
};

export default eventsPlugin;

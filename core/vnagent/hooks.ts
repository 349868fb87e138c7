/**
 * The node-call hooks of the vn-agent's plugins (the SDK's VnAgentCapability): request filters that refuse or rewrite
 * an admitted kubelet call, and output filters over the text the kubelet answers. The agent runs them with the plugin
 * host of its own process, for the plugins enabled for the calling tenant, in load order.
 */
import { Transform, type TransformCallback } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { hasNodeHooks, type NodeCall, type Plugin, type VnAgentCapability } from '../plugins/contract.ts';
import { PluginError, reportPluginError } from '../plugins/failures.ts';
import type { PluginHost } from '../plugins/host.ts';
import type { AgentTenant } from './auth.ts';
import { targetOf } from './routes.ts';

/** NodeCallFiltered is the outcome of the request filters: the query to send on, or the refusing plugin and why. */
export type NodeCallFiltered =
  { ok: true; query: Record<string, string[]>; changed: boolean } | { ok: false; plugin: string; reason: string };

/** PodMeta is what a node call shows of the super Pod it reaches. */
export interface PodMeta {
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** queryOf reads a request url's query parameters, each with all its values, in order. */
export function queryOf(url: string): Record<string, string[]> {
  const q: Record<string, string[]> = {};
  for (const [k, v] of new URL(url, 'https://vn-agent.invalid').searchParams) (q[k] ??= []).push(v);
  return q;
}

/** withQuery replaces a path's query by `query` (none when it is empty). */
export function withQuery(path: string, query: Record<string, readonly string[]>): string {
  const i = path.indexOf('?');
  const base = i >= 0 ? path.slice(0, i) : path;
  const p = new URLSearchParams();
  for (const [k, vs] of Object.entries(query)) for (const v of vs) p.append(k, v);
  const s = p.toString();
  return s ? `${base}?${s}` : base;
}

/**
 * nodeCallOf describes a tenant's request (its url in tenant names) as the hooks see it; `kind` is what the agent
 * already decided the path names, `pod` the super Pod it reaches (none for the usage endpoints).
 */
export function nodeCallOf(kind: NodeCall['kind'], method: string, url: string, pod?: PodMeta): NodeCall {
  const target = targetOf(url);
  const path = url.split('?')[0]!;
  // /<kind>/<namespace>/<pod>/<container>, or /<kind>/<namespace>/<pod>/<uid>/<container>; portForward names none
  const parts = path.split('/');
  const container = target && kind !== 'portForward' && parts.length > 4 ? parts.at(-1) : undefined;
  return {
    kind,
    method,
    ...(target && { namespace: target.namespace, pod: target.pod }),
    ...(container && { container }),
    query: queryOf(url),
    ...(pod?.labels && { podLabels: { ...pod.labels } }),
    ...(pod?.annotations && { podAnnotations: { ...pod.annotations } }),
  };
}

/** hooked lists the plugins enabled for the tenant that have node-call hooks, in load order. */
function hooked(host: PluginHost, t: AgentTenant): Array<[string, Plugin & VnAgentCapability]> {
  const out: Array<[string, Plugin & VnAgentCapability]> = [];
  for (const name of host.names()) {
    const p = host.get(name);
    if (p && hasNodeHooks(p) && host.enabledFor(t.tenant, name)) out.push([name, p]);
  }
  return out;
}

/**
 * filterNodeCall runs the request filters on a call: the first refusal stops it; each filter sees the query the one
 * before it left. A filter that throws or answers something else refuses the call (counted in vc_plugin_errors_total):
 * a filter is a guard, so its failure never lets a call through that it might have stopped.
 */
export function filterNodeCall(host: PluginHost, t: AgentTenant, call: NodeCall): NodeCallFiltered {
  let query = call.query as Record<string, string[]>;
  let changed = false;
  for (const [name, p] of hooked(host, t)) {
    if (!p.filterNodeCall) continue;
    let v: unknown;
    try {
      v = p.filterNodeCall({ ...call, query: structuredClone(query) }, { tenant: t.tenant });
      if (typeof v !== 'object' || v === null || typeof (v as { allow?: unknown }).allow !== 'boolean')
        throw new Error(`answered ${JSON.stringify(v)}, not { allow: true | false }`);
    } catch (err) {
      reportPluginError(new PluginError(name, 'filterNodeCall', err), t.key, { kind: call.kind, pod: call.pod });
      return { ok: false, plugin: name, reason: `plugin ${name} failed to decide this call` };
    }
    const verdict = v as { allow: boolean; reason?: unknown; query?: unknown };
    if (!verdict.allow) return { ok: false, plugin: name, reason: String(verdict.reason ?? 'no reason given') };
    if (verdict.query !== undefined) {
      query = normalQuery(verdict.query);
      changed = true;
    }
  }
  return { ok: true, query, changed };
}

/** normalQuery keeps a filter's rewritten query to names with lists of strings. */
function normalQuery(q: unknown): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  if (typeof q !== 'object' || q === null) return out;
  for (const [k, v] of Object.entries(q)) out[k] = (Array.isArray(v) ? v : [v]).map(String);
  return out;
}

/**
 * outputFilter composes the output filters enabled for the tenant into one function over text, or undefined when
 * none is. A filter that throws withholds the text (an empty string in its place; counted): it may have been meant
 * to redact it.
 */
export function outputFilter(host: PluginHost, t: AgentTenant, call: NodeCall): ((text: string) => string) | undefined {
  const filters = hooked(host, t).filter(([, p]) => p.filterNodeOutput);
  if (!filters.length) return undefined;
  return (text) => {
    let out = text;
    for (const [name, p] of filters) {
      try {
        const r: unknown = p.filterNodeOutput!(call, out, { tenant: t.tenant });
        if (typeof r !== 'string') throw new Error(`answered ${typeof r}, not a string`);
        out = r;
      } catch (err) {
        reportPluginError(new PluginError(name, 'filterNodeOutput', err), t.key, { kind: call.kind, pod: call.pod });
        return '';
      }
    }
    return out;
  };
}

/** MAX_LINE is where a line without an end is cut and filtered as it is, so one endless line is not held whole. */
export const MAX_LINE = 1024 * 1024;

/**
 * lineFilter is a stream that passes text through `f` one line at a time (each with its `\n`; a last line without
 * one when the stream ends, or once it reaches MAX_LINE), so a follow stream is filtered as it flows.
 */
export function lineFilter(f: (line: string) => string): Transform {
  const decoder = new StringDecoder('utf8');
  let pending = '';
  const emit = (t: Transform, s: string): void => {
    if (s) t.push(f(s));
  };
  return new Transform({
    transform(this: Transform, chunk: Buffer, _enc: BufferEncoding, done: TransformCallback) {
      pending += decoder.write(chunk);
      let i: number;
      while ((i = pending.indexOf('\n')) >= 0) {
        emit(this, pending.slice(0, i + 1));
        pending = pending.slice(i + 1);
      }
      if (pending.length >= MAX_LINE) {
        emit(this, pending);
        pending = '';
      }
      done();
    },
    flush(this: Transform, done: TransformCallback) {
      emit(this, pending + decoder.end());
      done();
    },
  });
}

import { Registry, collectDefaultMetrics } from 'prom-client';

/**
 * registry holds every metric of the process and is what `/metrics` serves. It carries the default Node.js process
 * metrics, prefixed `vc_`; components register their own metrics on it with `registers: [registry]`.
 */
export const registry = new Registry();

collectDefaultMetrics({ register: registry, prefix: 'vc_' });

import { Registry, collectDefaultMetrics } from 'prom-client';

/**
 * registry holds every metric of the process and is what `/metrics` serves. It carries the standard Node.js process and
 * runtime metrics under their standard names (process_*, nodejs_*, without the project's prefix) so stock Node.js
 * dashboards work; components register their own vc_* metrics on it with `registers: [registry]`.
 */
export const registry = new Registry();

collectDefaultMetrics({ register: registry });

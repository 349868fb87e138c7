/**
 * This module checks metric names against Prometheus's naming conventions
 * (https://prometheus.io/docs/practices/naming/), so the names a scrape sees are the ones stock dashboards and
 * alert rules assume.
 */

/** MetricShape is what the naming rules look at: a metric's name, its type and its label names. */
export interface MetricShape {
  name: string;
  type: string;
  labels: readonly string[];
}

/** STANDARD_RUNTIME matches the standard process and Node.js runtime metrics (prom-client's defaults). */
export const STANDARD_RUNTIME = /^(process|nodejs)_/;

// Units other than the base units Prometheus asks for (seconds, bytes, ratios rather than percent).
const NON_BASE_UNIT =
  /_(ms|millis|milliseconds|us|microseconds|ns|nanoseconds|minutes|hours|days|kb|mb|gb|kilobytes|megabytes|gigabytes|percent)(_|$)/;
// What a histogram or summary measures must say its unit at the end of its name.
const UNIT_SUFFIX = /_(seconds|bytes|ratio|objects|keys|requests|items)$/;
const SNAKE = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;

/**
 * metricNameProblems lists, one sentence each, how a metric breaks the naming rules: snake_case names and labels,
 * the project's own metrics under `vc_` and the standard runtime ones without it, counters and only counters ending
 * `_total`, base units only, and histograms and summaries ending with their unit. Empty when it breaks none.
 */
export function metricNameProblems(m: MetricShape): string[] {
  const out: string[] = [];
  const standard = STANDARD_RUNTIME.test(m.name);
  if (!SNAKE.test(m.name)) out.push(`${m.name}: not snake_case`);
  if (/^vc_(process|nodejs)_/.test(m.name))
    out.push(
      `${m.name}: a standard runtime metric under the project's prefix; stock dashboards read ${m.name.slice(3)}`,
    );
  else if (!standard && !m.name.startsWith('vc_')) out.push(`${m.name}: the project's metrics start with vc_`);
  if (m.type === 'counter' && !m.name.endsWith('_total')) out.push(`${m.name}: a counter's name ends with _total`);
  // prom-client's standard gauges nodejs_active_*_total keep their standard names.
  if (m.type !== 'counter' && m.name.endsWith('_total') && !standard)
    out.push(`${m.name}: only a counter's name ends with _total (this is a ${m.type})`);
  if (NON_BASE_UNIT.test(m.name)) out.push(`${m.name}: use base units (_seconds, _bytes, _ratio)`);
  if ((m.type === 'histogram' || m.type === 'summary') && !UNIT_SUFFIX.test(m.name))
    out.push(`${m.name}: a ${m.type}'s name ends with its unit (e.g. _seconds, _bytes)`);
  for (const l of m.labels) {
    if (!SNAKE.test(l)) out.push(`${m.name}: label ${l} is not snake_case`);
    if (l.startsWith('__')) out.push(`${m.name}: label ${l} is reserved (leading __)`);
  }
  return out;
}

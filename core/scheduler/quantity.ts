// Kubernetes resource quantities ("100m", "1.5Gi", "2e3") held exactly as bigint milli-units, so sums and
// divisions of slices, quotas and requests never meet floating-point error. The grammar is apimachinery's
// resource.Quantity: an optional sign, a decimal number, then a binary suffix (Ki..Ei), a decimal suffix (n, u, m,
// k, M, G, T, P, E) or an exponent (e3, E-2). Values finer than a milli-unit round up, as Quantity.MilliValue does.

/** Milli is a quantity in thousandths of its unit: "100m" CPU is 100n, "1Ki" memory is 1_024_000n. */
export type Milli = bigint;

/** QuantityError is a string that is not a Kubernetes quantity, or a negative one where none is allowed. */
export class QuantityError extends Error {}

const BINARY: Record<string, bigint> = {
  Ki: 1024n,
  Mi: 1024n ** 2n,
  Gi: 1024n ** 3n,
  Ti: 1024n ** 4n,
  Pi: 1024n ** 5n,
  Ei: 1024n ** 6n,
};
const DECIMAL: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const SHAPE = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$/;

/** parseQuantity reads a Kubernetes quantity as exact milli-units; negative values are refused. */
export function parseQuantity(text: string): Milli {
  const m = SHAPE.exec(text);
  if (!m) throw new QuantityError(`"${text}" is not a Kubernetes quantity (e.g. 100m, 1.5, 128Mi, 2G, 1e3)`);
  const [, sign, number, suffix = ''] = m as unknown as [string, string, string, string | undefined];
  const [whole, fraction = ''] = number.split('.');
  // value = digits * 10^(exp10) * mult, with digits the number without its decimal point
  const digits = BigInt(`${whole}${fraction}` || '0');
  let exp10 = 3 - fraction.length;
  let mult = 1n;
  if (suffix in BINARY) mult = BINARY[suffix]!;
  else if (suffix in DECIMAL) exp10 += DECIMAL[suffix]!;
  else exp10 += Number(suffix.slice(1));
  if (Math.abs(exp10) > 60) throw new QuantityError(`"${text}" is out of range`);
  const scaled = digits * mult;
  const value = exp10 >= 0 ? scaled * 10n ** BigInt(exp10) : ceilDiv(scaled, 10n ** BigInt(-exp10));
  if (sign === '-' && value !== 0n) throw new QuantityError(`"${text}" is negative`);
  return value;
}

/** formatMilli writes milli-units back as a short quantity for messages: 100m, 2, 128Mi, 1500m. */
export function formatMilli(value: Milli): string {
  if (value % 1000n !== 0n) return `${value}m`;
  const units = value / 1000n;
  for (const suffix of ['Ei', 'Pi', 'Ti', 'Gi', 'Mi', 'Ki'] as const) {
    const base = BINARY[suffix]!;
    if (units !== 0n && units % base === 0n) return `${units / base}${suffix}`;
  }
  return `${units}`;
}

/** ceilDiv is a / b rounded up, for non-negative a and positive b. */
export function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b;
}

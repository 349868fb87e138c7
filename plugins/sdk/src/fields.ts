/**
 * Field allow-lists: what a plugin does with every field of a tenant object on its way to the super cluster. A field
 * the table does not name (one a newer Kubernetes added, or a typo a lenient apiserver kept) is refused, so that
 * nothing reaches the super cluster because nobody thought of it.
 */

/** FieldHow is what happens to one field: copied as it is, copied once a named check passed, rewritten, or refused. */
export type FieldHow = 'copy' | 'check' | 'translate' | 'refuse';

/** FieldRule is the rule of one field; `fields` gives the rules inside an object (or each object of a list). */
export interface FieldRule {
  how: FieldHow;
  /** why the field is checked, translated or refused (the refusal's message for `refuse`) */
  why?: string;
  /** the rules of the fields inside the value (an object), or inside each item (a list, with `list`) */
  fields?: FieldShape;
  list?: boolean;
}

/** FieldShape maps each field name an object may have to its rule. */
export type FieldShape = Readonly<Record<string, FieldRule>>;

const objectRule = (fields: FieldShape, how: FieldHow = 'copy', why?: string): FieldRule => ({
  how,
  fields,
  ...(why && { why }),
});

/**
 * fieldRule builds the rules of a FieldShape: `copy` (as it is; the value, whatever its inner shape, has no isolation
 * meaning), `check(why)` (copied once the named check passed), `translate(why)` (rewritten for the super cluster),
 * `refuse(why)` (the object is refused whenever the field is set: not null, empty string or empty list), `object`
 * (an object whose own fields follow a shape) and `list` (a list of such objects).
 */
export const fieldRule = {
  copy: { how: 'copy' } as FieldRule,
  check: (why: string): FieldRule => ({ how: 'check', why }),
  translate: (why: string): FieldRule => ({ how: 'translate', why }),
  refuse: (why: string): FieldRule => ({ how: 'refuse', why }),
  object: objectRule,
  list: (fields: FieldShape, how: FieldHow = 'copy', why?: string): FieldRule => ({
    ...objectRule(fields, how, why),
    list: true,
  }),
} as const;

/** FieldRefusal names the first field of an object its allow-list refuses, and why. */
export interface FieldRefusal {
  field: string;
  message: string;
}

const isSet = (v: unknown): boolean =>
  v !== undefined && v !== null && v !== '' && !(Array.isArray(v) && v.length === 0);

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/**
 * checkFields walks `value` (found at `path`) against `shape` and returns its first field that no rule names (`unknown`
 * completes the message: which version's fields the table knows) or that a `refuse` rule refuses; undefined when every
 * field has a rule that lets it through.
 */
export function checkFields(
  value: unknown,
  shape: FieldShape,
  path: string,
  unknown: string,
): FieldRefusal | undefined {
  if (!isObject(value)) return undefined;
  for (const [key, v] of Object.entries(value)) {
    const at = `${path}.${key}`;
    const rule = Object.hasOwn(shape, key) ? shape[key] : undefined;
    if (!rule) return { field: at, message: `${at}: no rule exists for this field yet; ${unknown}` };
    if (rule.how === 'refuse') {
      if (isSet(v)) return { field: at, message: `${at}: ${rule.why ?? 'not allowed'}` };
      continue;
    }
    if (!rule.fields || !isSet(v)) continue;
    const items: Array<[string, unknown]> =
      rule.list && Array.isArray(v) ? v.map((x, i) => [`${at}[${i}]`, x]) : [[at, v]];
    for (const [p, x] of items) {
      const r = checkFields(x, rule.fields, p, unknown);
      if (r) return r;
    }
  }
  return undefined;
}

/** FieldRow is one line of a table's description: a field's path, what happens to it, and why. */
export interface FieldRow {
  field: string;
  how: FieldHow;
  why?: string;
}

/** describeFields lists every field of a shape, nested ones under their parent's path, for documentation and tests. */
export function describeFields(shape: FieldShape, path = ''): FieldRow[] {
  return Object.entries(shape).flatMap(([key, rule]) => {
    const at = `${path}${path ? '.' : ''}${key}${rule.list ? '[]' : ''}`;
    const row: FieldRow = { field: at, how: rule.how, ...(rule.why && { why: rule.why }) };
    return [row, ...(rule.fields ? describeFields(rule.fields, at) : [])];
  });
}

/**
 * ExtraArgs are flags by name (without `--`) that replace a default of the same name in place, or are appended
 * in name order when there is no such default.
 */
export type ExtraArgs = Readonly<Record<string, string>>;

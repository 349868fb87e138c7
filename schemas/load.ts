import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parseAllDocuments, parseDocument } from 'yaml';
import { formatErrors, validate, type FieldError, type SchemaName } from './validate.ts';

/** ErrorClass is the error a caller wants for a file it cannot use (each program has its own). */
export type ErrorClass = new (message: string) => Error;

function readText(file: string, Err: ErrorClass): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    throw new Err(`${file}: cannot read: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** readYamlDocuments reads every document of a YAML file as plain values; errors name the file and the document. */
export function readYamlDocuments(file: string, Err: ErrorClass): unknown[] {
  return parseAllDocuments(readText(file, Err)).map((doc, i) => {
    if ('errors' in doc && doc.errors.length)
      throw new Err(`${file}: document ${i + 1}: invalid YAML: ${doc.errors[0]!.message}`);
    return doc.toJS() as unknown;
  });
}

/** ConfigFileOptions tune loadConfigFile. */
export interface ConfigFileOptions<T> {
  /** the schema (schemas/) the document must satisfy */
  schema: SchemaName;
  Err: ErrorClass;
  /** an empty file is this value (validated like any other) instead of null */
  empty?: unknown;
  /** adds context to violations before they are reported, such as the name of the list entry a pointer is in */
  explain?: (errors: FieldError[], value: unknown) => FieldError[];
  /** rewrites the configuration's relative paths with `abs`, which resolves them against the file's directory */
  resolvePaths?: (cfg: T, abs: (path: string) => string) => void;
}

/**
 * loadConfigFile reads a one-document YAML configuration file, validates it against its JSON Schema and resolves
 * its relative paths. Every error names the file and, for a violation, the field (`<file>: /ops/port must be ...`).
 */
export function loadConfigFile<T>(file: string, o: ConfigFileOptions<T>): T {
  const doc = parseDocument(readText(file, o.Err), { prettyErrors: true });
  if (doc.errors.length) throw new o.Err(`${file}: invalid YAML: ${doc.errors[0]!.message}`);
  const value = (doc.toJS() as unknown) ?? o.empty ?? null;
  const errors = validate(o.schema, value);
  if (errors.length) throw new o.Err(formatErrors(file, o.explain ? o.explain(errors, value) : errors));
  const cfg = value as T;
  const base = dirname(resolve(file));
  o.resolvePaths?.(cfg, (p) => resolve(base, p));
  return cfg;
}

/** pluginPath resolves a third-party plugin given as a path (`./x`, `/x`) with `abs`; a package name stays as it is. */
export function pluginPath(spec: string, abs: (path: string) => string): string {
  return spec.startsWith('.') || isAbsolute(spec) ? abs(spec) : spec;
}

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

const here = dirname(fileURLToPath(import.meta.url));
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

/** SCHEMAS names the JSON Schemas in this folder. */
export const SCHEMAS = {
  plugin: 'plugin.schema.json',
  managerConfig: 'manager-config.schema.json',
  virtualCluster: 'virtualcluster.schema.json',
  clusterVersion: 'clusterversion.schema.json',
  gitSource: 'gitsource.schema.json',
  vnAgentConfig: 'vnagent-config.schema.json',
  tenantPolicy: 'tenantpolicy.schema.json',
  notification: 'notification.schema.json',
  virtualClusterControlPlane: 'virtualclustercontrolplane.schema.json',
  virtualClusterInfraCluster: 'virtualclusterinfracluster.schema.json',
  capiCluster: 'capicluster.schema.json',
} as const;
/** SchemaName is one of SCHEMAS' keys. */
export type SchemaName = keyof typeof SCHEMAS;

/** FieldError is one schema violation: the JSON pointer of the field and what is wrong with it. */
export interface FieldError {
  pointer: string;
  message: string;
}

// strictRequired would reject the if/then/else that ties `resource` and `mutates` to the direction.
// verbose gives each error its schema node, whose description explains a const that depends on another field.
const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false, allowUnionTypes: true, verbose: true });
addFormats(ajv);
const compiled = new Map<SchemaName, ValidateFunction>();

/** loadSchema reads one schema document. */
export function loadSchema(name: SchemaName): Record<string, unknown> {
  return JSON.parse(readFileSync(join(here, SCHEMAS[name]), 'utf8')) as Record<string, unknown>;
}

// Every schema is registered under its $id, so that one may $ref another (the manager configuration's tenantDefaults
// refer to the TenantPolicy's definitions).
let registered = false;

function validator(name: SchemaName): ValidateFunction {
  let v = compiled.get(name);
  if (!v) {
    if (!registered) {
      for (const n of Object.keys(SCHEMAS) as SchemaName[]) ajv.addSchema(loadSchema(n));
      registered = true;
    }
    const id = loadSchema(name).$id as string;
    v = ajv.getSchema(id);
    if (!v) throw new Error(`schema ${SCHEMAS[name]} has no $id ajv knows`);
    compiled.set(name, v);
  }
  return v;
}

/** validate checks a value against a schema and returns its violations (empty when valid). */
export function validate(name: SchemaName, value: unknown): FieldError[] {
  const v = validator(name);
  if (v(value)) return [];
  return (v.errors ?? []).filter((e) => e.keyword !== 'if').map(toFieldError);
}

function toFieldError(e: ErrorObject): FieldError {
  let pointer = e.instancePath || '/';
  let message = e.message ?? 'is invalid';
  if (e.keyword === 'additionalProperties') {
    const extra = (e.params as { additionalProperty: string }).additionalProperty;
    pointer = `${e.instancePath}/${extra}`;
    message = 'is not a known field';
  } else if (e.keyword === 'required') {
    pointer = `${e.instancePath}/${(e.params as { missingProperty: string }).missingProperty}`;
    message = 'is required';
  } else if (e.keyword === 'dependentRequired') {
    const p = e.params as { property: string; missingProperty: string };
    pointer = `${e.instancePath}/${p.property}`;
    message = `goes with ${p.missingProperty}, which is missing`;
  } else if (e.keyword === 'const') {
    const why = (e.parentSchema as { description?: string } | undefined)?.description;
    if (why) message = `must be ${JSON.stringify((e.params as { allowedValue: unknown }).allowedValue)}: ${why}`;
  } else if (e.keyword === 'enum') {
    message = `must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
  }
  return { pointer, message };
}

/** formatErrors renders violations as `<where>: <pointer> <message>` lines. */
export function formatErrors(where: string, errors: FieldError[]): string {
  return errors.map((e) => `${where}: ${e.pointer} ${e.message}`).join('\n');
}

/**
 * compileSchema compiles a schema that is not one of SCHEMAS (a plugin's configSchema) into a checker that returns
 * violations like validate. It throws when the schema itself is not valid JSON Schema.
 */
export function compileSchema(schema: Record<string, unknown>): (value: unknown) => FieldError[] {
  // A private instance: plugin schemas may carry their own $id, and must not see or clash with the project's.
  const own = new Ajv2020({ allErrors: true, strict: false, allowUnionTypes: true });
  addFormats(own);
  const v = own.compile(schema);
  return (value) => (v(value) ? [] : (v.errors ?? []).filter((e) => e.keyword !== 'if').map(toFieldError));
}

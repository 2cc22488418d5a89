/**
 * JSON Schema (OpenAI tool parameters, response_format.json_schema) -> the OpenAPI subset
 * Gemini's `Schema` accepts: unknown keys (`additionalProperties`, `$schema`,
 * `strict`, …) are dropped, `$ref` into `$defs`/`definitions` is inlined, `type: [x, "null"]`
 * and `anyOf` with a null branch become `nullable`, `const` becomes a one-value enum.
 */
import { badRequest } from '../../../shared/errors';

type Schema = Record<string, unknown>;

const KEPT = new Set([
  'type',
  'format',
  'title',
  'description',
  'nullable',
  'enum',
  'maxItems',
  'minItems',
  'properties',
  'required',
  'minProperties',
  'maxProperties',
  'minLength',
  'maxLength',
  'pattern',
  'example',
  'anyOf',
  'propertyOrdering',
  'default',
  'items',
  'minimum',
  'maximum',
]);
/** String formats Gemini accepts; others (email, uri, …) are rejected upstream, so dropped. */
const STRING_FORMATS = new Set(['enum', 'date-time']);
const MAX_DEPTH = 40;

const isObject = (v: unknown): v is Schema => !!v && typeof v === 'object' && !Array.isArray(v);

function resolveRef(ref: string, defs: Schema, param: string): Schema {
  const m = /^#\/(?:\$defs|definitions)\/(.+)$/.exec(ref);
  const target = m ? defs[decodeURIComponent(m[1]!.replace(/~1/g, '/').replace(/~0/g, '~'))] : undefined;
  if (!isObject(target)) throw badRequest(`${param}: cannot resolve $ref '${ref}'.`, param, 'invalid_schema');
  return target;
}

function convert(schema: unknown, defs: Schema, param: string, depth: number): Schema {
  if (depth > MAX_DEPTH) throw badRequest(`${param} is nested too deeply or is recursive.`, param, 'invalid_schema');
  if (!isObject(schema)) return {};
  if (typeof schema.$ref === 'string') {
    const { $ref, ...siblings } = schema;
    return convert({ ...resolveRef($ref as string, defs, param), ...siblings }, defs, param, depth + 1);
  }
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (!KEPT.has(key)) continue;
    if (key === 'properties' && isObject(value)) {
      out.properties = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, convert(v, defs, param, depth + 1)]));
    } else if (key === 'items') {
      out.items = convert(Array.isArray(value) ? value[0] : value, defs, param, depth + 1);
    } else if (key === 'anyOf' && Array.isArray(value)) {
      Object.assign(out, anyOf(value, defs, param, depth));
    } else if (key === 'type' && Array.isArray(value)) {
      const types = value.filter((t) => t !== 'null');
      if (types.length < value.length) out.nullable = true;
      if (types.length === 1) out.type = types[0];
      else if (types.length > 1) out.anyOf = types.map((t) => ({ type: t }));
    } else {
      out[key] = value;
    }
  }
  if (Array.isArray(schema.oneOf) && !out.anyOf) Object.assign(out, anyOf(schema.oneOf, defs, param, depth));
  if ('const' in schema && !out.enum) out.enum = [schema.const];
  if (Array.isArray(out.enum)) {
    out.enum = out.enum.filter((v) => v !== null).map(String);
    out.type ??= 'string';
  }
  if (out.type === 'string' && typeof out.format === 'string' && !STRING_FORMATS.has(out.format)) delete out.format;
  if (Array.isArray(out.required) && isObject(out.properties)) {
    const props = out.properties;
    out.required = (out.required as unknown[]).filter((r) => typeof r === 'string' && r in props);
  }
  return out;
}

/** anyOf with a `{type:"null"}` branch -> nullable; a single remaining branch is inlined. */
function anyOf(branches: unknown[], defs: Schema, param: string, depth: number): Schema {
  const nonNull = branches.filter((b) => !(isObject(b) && b.type === 'null'));
  const nullable = nonNull.length < branches.length ? { nullable: true } : {};
  const converted = nonNull.map((b) => convert(b, defs, param, depth + 1));
  if (converted.length === 1) return { ...converted[0], ...nullable };
  return { anyOf: converted, ...nullable };
}

export function toGeminiSchema(schema: Record<string, unknown>, param: string): Record<string, unknown> {
  const defs = { ...(isObject(schema.definitions) ? schema.definitions : {}), ...(isObject(schema.$defs) ? schema.$defs : {}) };
  return convert(schema, defs, param, 0);
}

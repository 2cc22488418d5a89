/**
 * Gemini's `Schema` (the OpenAPI 3.0 subset of `responseSchema` and function `parameters`,
 * types in upper or lower case, `nullable`) -> JSON Schema, which every chat provider's
 * structured output and tools take. The reverse of providers/_shared/gemini/schema.ts.
 */
import { badRequest } from '../../shared/errors';

type Schema = Record<string, unknown>;

const MAX_DEPTH = 40;
/** Keys copied as they are; the rest (`propertyOrdering`, `example`, ...) have no JSON Schema meaning or are dropped by providers anyway. */
const COPIED = [
  'title',
  'description',
  'format',
  'enum',
  'required',
  'minItems',
  'maxItems',
  'minLength',
  'maxLength',
  'pattern',
  'minimum',
  'maximum',
  'minProperties',
  'maxProperties',
  'default',
];

const isObject = (v: unknown): v is Schema => !!v && typeof v === 'object' && !Array.isArray(v);

function convert(schema: unknown, param: string, depth: number): Schema {
  if (depth > MAX_DEPTH) throw badRequest(`${param} is nested too deeply.`, param, 'invalid_schema');
  if (!isObject(schema)) throw badRequest(`${param} must be a schema object.`, param, 'invalid_schema');
  const out: Schema = {};
  const type = typeof schema.type === 'string' && schema.type !== 'TYPE_UNSPECIFIED' ? schema.type.toLowerCase() : undefined;
  if (type) out.type = schema.nullable === true ? [type, 'null'] : type;
  for (const key of COPIED) if (schema[key] !== undefined) out[key] = schema[key];
  if (isObject(schema.properties)) {
    out.properties = Object.fromEntries(Object.entries(schema.properties).map(([k, v]) => [k, convert(v, `${param}.properties.${k}`, depth + 1)]));
  }
  if (schema.items !== undefined) out.items = convert(schema.items, `${param}.items`, depth + 1);
  if (Array.isArray(schema.anyOf)) {
    const branches = schema.anyOf.map((b, i) => convert(b, `${param}.anyOf[${i}]`, depth + 1));
    out.anyOf = schema.nullable === true && !type ? [...branches, { type: 'null' }] : branches;
  }
  return out;
}

export function fromGeminiSchema(schema: Record<string, unknown>, param: string): Record<string, unknown> {
  return convert(schema, param, 0);
}

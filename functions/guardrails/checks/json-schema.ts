import Ajv, { type ValidateFunction } from 'ajv';
import { z } from '../../shared/validation';
import { jsonOf } from './json-text';
import { defineCheck } from './types';
import { BoundedMap } from './util';

/**
 * `default.jsonSchema`: the JSON of the text (see jsonOf) is valid against `schema`
 * (JSON Schema draft-07 / 2019-09 keywords, Ajv 8). Each distinct schema is compiled once
 * and cached. Ajv's format plugins are not bundled: a few common formats are built in,
 * other `format` values are not checked.
 */
const ajv = new Ajv({ allErrors: true, strict: false, logger: false });
ajv.addFormat('email', /^[^\s@]+@[^\s@]+\.[^\s@]+$/);
ajv.addFormat('uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
ajv.addFormat('date', /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/);
ajv.addFormat('date-time', (s: string) => /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/.test(s) && !Number.isNaN(Date.parse(s)));
ajv.addFormat('uri', (s: string) => /^[a-z][a-z0-9+.-]*:/i.test(s) && URL.canParse(s));
ajv.addFormat('ipv4', /^((25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(25[0-5]|2[0-4]\d|1?\d?\d)$/);

const validators = new BoundedMap<string, ValidateFunction>(200, (_key, fn) => ajv.removeSchema(fn.schema as object));

/** The compiled validator of a schema; throws Ajv's message for an invalid schema. */
export function compileSchema(schema: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(schema);
  let fn = validators.get(key);
  if (!fn) {
    // A schema `$id` registers globally in Ajv; a different schema reusing the id replaces it.
    if (typeof schema.$id === 'string' && ajv.getSchema(schema.$id)) ajv.removeSchema(schema.$id);
    fn = ajv.compile(schema);
    validators.set(key, fn);
  }
  return fn;
}

const schemaParam = z.record(z.string(), z.unknown()).check(
  z.superRefine((schema, ctx) => {
    try {
      compileSchema(schema);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: `expected a valid JSON Schema: ${(err as Error).message}`, input: schema });
    }
  }),
);

export const jsonSchema = defineCheck({
  id: 'default.jsonSchema',
  parameters: z.strictObject({ schema: schemaParam }),
  run(input, params) {
    const value = jsonOf(input);
    if (value === undefined) return { verdict: false, explanation: 'The text contains no JSON.' };
    const validate = compileSchema(params.schema);
    if (validate(value)) return { verdict: true, explanation: 'The JSON matches the schema.' };
    const errors = (validate.errors ?? []).slice(0, 20).map((e) => ({ path: e.instancePath || '/', message: e.message ?? 'invalid' }));
    return {
      verdict: false,
      explanation: `The JSON does not match the schema: ${errors.map((e) => `${e.path} ${e.message}`).join('; ')}.`,
      data: { errors },
    };
  },
});

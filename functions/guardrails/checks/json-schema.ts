import { dereference, format, validate, type OutputUnit, type Schema } from '@cfworker/json-schema';
import { compileLinearRegex, linearRegexProblem } from '../../shared/linear-regex';
import { z } from '../../shared/validation';
import { jsonOf } from './json-text';
import { DRAFT_07_ID, META_SCHEMA } from './json-schema-meta';
import { defineCheck } from './types';
import { BoundedMap } from './util';

/**
 * `default.jsonSchema`: the JSON of the text (see jsonOf) is valid against `schema`
 * (JSON Schema draft-07, plus the 2019-09 / 2020-12 keywords `$defs`, `prefixItems`,
 * `dependentRequired`, `dependentSchemas`, `unevaluated*`, `min/maxContains`, `$anchor`,
 * and OpenAPI's `nullable`). Validated by @cfworker/json-schema, which interprets the schema
 * (no code generation, so no `new Function` at cold start). A schema is checked when the
 * guardrail is written: against the meta-schema, its `$ref`s must resolve, its regexes
 * must compile. Only the formats below are checked; other `format` values pass.
 *
 * `pattern` runs on RE2 semantics in linear time (functions/shared/linear-regex.ts), not on
 * V8's backtracking engine: a schema can come inline with a caller's config and be checked
 * against the caller's own request, so `^(a+)+$` must not be able to stall the container.
 * The library has no engine option, so each `pattern` becomes a private format of ours.
 * (`patternProperties` keys, matched against property names, still use V8's engine.)
 */

const FORMATS: Record<string, (s: string) => boolean> = {
  email: (s) => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(s),
  uuid: (s) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s),
  date: (s) => /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/.test(s),
  'date-time': (s) => /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/.test(s) && !Number.isNaN(Date.parse(s)),
  uri: (s) => /^[a-z][a-z0-9+.-]*:/i.test(s) && URL.canParse(s),
  ipv4: (s) => /^((25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(25[0-5]|2[0-4]\d|1?\d?\d)$/.test(s),
};
// The library checks `format` against its own module-level table (17 formats, with
// definitions of its own). Make that table exactly ours, so verdicts stay what they were:
// the same six formats, the same definitions, every other name (including `__proto__` and
// `constructor`: no prototype) unchecked.
for (const name of Object.keys(format)) delete format[name];
Object.setPrototypeOf(format, null);
Object.assign(format, FORMATS);

/**
 * The private formats that stand for `pattern`s (names no real format can have), one per
 * pattern of each compiled schema, dropped with it from the cache: the table cannot grow
 * with the schemas callers send, and no cached schema loses a format it uses.
 */
const PATTERN_FORMAT_PREFIX = '\u0000pattern:';
const patternOf = new Map<string, string>();
let patternFormats = 0;

function addPatternFormat(pattern: string, owned: string[]): string {
  const re = compileLinearRegex(pattern);
  const name = `${PATTERN_FORMAT_PREFIX}${++patternFormats}`;
  format[name] = (text: string) => re.test(text);
  patternOf.set(name, pattern);
  owned.push(name);
  return name;
}

function dropPatternFormats(names: readonly string[]): void {
  for (const name of names) {
    delete format[name];
    patternOf.delete(name);
  }
}

/** `String does not match format "<private>"` -> `... pattern "<the pattern>"`. */
function patternMessage(error: string): string | undefined {
  const name = /format "(\u0000pattern:\d+)"/.exec(error)?.[1];
  const pattern = name === undefined ? undefined : patternOf.get(name);
  return pattern === undefined ? undefined : `String does not match pattern ${JSON.stringify(pattern)}`;
}

/** `$schema` values accepted (the draft-07 meta-schema, as Ajv 8 accepted them). */
const KNOWN_DRAFTS = new Set([DRAFT_07_ID, `${DRAFT_07_ID}#`, 'http://json-schema.org/schema', 'http://json-schema.org/schema#']);

/**
 * Base URI of a schema without `$id` (relative `$ref`/`$id` resolve against it). The
 * library's default names its own site, which would then show in error messages.
 */
const BASE_URI = new URL('schema:/');

type Lookup = Record<string, Schema | boolean>;

const metaLookup = dereference(META_SCHEMA as Schema, Object.create(null) as Lookup, BASE_URI);

/** A schema ready to validate with: its own copy and every subschema by URI. */
export interface CompiledSchema {
  schema: Schema | boolean;
  lookup: Lookup;
  /** The private formats of its patterns. */
  formats: string[];
}

const compiled = new BoundedMap<string, CompiledSchema>(200, (_key, evicted) => dropPatternFormats(evicted.formats));

/** The schema ready to validate with, cached by its JSON; throws a message naming the problem. */
export function compileSchema(schema: Record<string, unknown>): CompiledSchema {
  const key = JSON.stringify(schema);
  let c = compiled.get(key);
  if (!c) {
    c = prepare(JSON.parse(key) as Schema);
    compiled.set(key, c);
  }
  return c;
}

function prepare(schema: Schema): CompiledSchema {
  const formats: string[] = [];
  try {
    return prepareWith(schema, formats);
  } catch (err) {
    dropPatternFormats(formats);
    throw err;
  }
}

function prepareWith(schema: Schema, formats: string[]): CompiledSchema {
  if (schema.$schema !== undefined && !KNOWN_DRAFTS.has(schema.$schema)) {
    throw new Error(`unsupported $schema ${JSON.stringify(schema.$schema)}: this check supports JSON Schema draft-07 (${DRAFT_07_ID}#)`);
  }
  const meta = validate(schema, META_SCHEMA as Schema, '7', metaLookup, false);
  if (!meta.valid) throw new Error(`schema is invalid: ${describe(meta.errors, 5)}`);
  // Records every subschema by URI (and marks each `$ref` with its absolute URI); throws
  // for two subschemas with the same `$id`. The copy is ours: the marks do not leak out.
  let lookup: Lookup;
  try {
    lookup = dereference(schema, Object.create(null) as Lookup, BASE_URI);
  } catch (err) {
    const uri = /^Duplicate schema URI "(.*)"/.exec((err as Error).message)?.[1];
    throw uri === undefined ? err : new Error(`two subschemas have the same $id (${uri})`);
  }
  for (const [s, at] of subschemas(schema)) {
    if (typeof s.nullable === 'boolean' && s.nullable) {
      // OpenAPI's `nullable` (as Ajv 8 had it): null is one more allowed type.
      if (s.type === undefined) throw new Error(`"nullable" cannot be used without "type" (at ${at || '/'})`);
      const types = Array.isArray(s.type) ? s.type : [s.type];
      if (!types.includes('null')) s.type = [...types, 'null'];
    }
    // The library compiles regexes as it validates; a bad one is an error now, not then.
    if (typeof s.pattern === 'string') {
      const problem = linearRegexProblem(s.pattern);
      if (problem) throw new Error(`${problem} (at ${at}/pattern; RE2 syntax: no backreferences or lookaround)`);
      const name = addPatternFormat(s.pattern, formats);
      // A subschema with a format of its own keeps it and checks the pattern in an allOf.
      if (s.format === undefined) s.format = name;
      else s.allOf = [...((s.allOf as Schema[] | undefined) ?? []), { format: name }];
      delete s.pattern;
    }
    for (const p of Object.keys(s.patternProperties ?? {})) regex(p, `${at}/patternProperties`);
    for (const [ref, abs] of [
      [s.$ref, s.__absolute_ref__],
      [s.$recursiveRef, s.__absolute_recursive_ref__],
    ] as const) {
      if (ref === undefined || abs === undefined || lookup[abs] !== undefined) continue;
      // Ajv knew the draft-07 meta-schema by its id; so does this check.
      if (abs.startsWith(DRAFT_07_ID) && lookup[DRAFT_07_ID] === undefined) {
        dereference(META_SCHEMA as Schema, lookup, BASE_URI);
        if (lookup[abs] !== undefined) continue;
      }
      throw new Error(`can't resolve reference ${JSON.stringify(ref)} (at ${at || '/'})`);
    }
  }
  return { schema, lookup, formats };
}

function regex(source: string, at: string): void {
  try {
    new RegExp(source, 'u');
  } catch (err) {
    throw new Error(`${(err as Error).message} (at ${at})`);
  }
}

/** Keywords whose value is a subschema, an array of them, or a map of them. */
const ONE = [
  'additionalItems',
  'unevaluatedItems',
  'items',
  'contains',
  'additionalProperties',
  'unevaluatedProperties',
  'propertyNames',
  'not',
  'if',
  'then',
  'else',
];
const LIST = ['items', 'prefixItems', 'allOf', 'anyOf', 'oneOf'];
const MAP = ['properties', 'patternProperties', 'definitions', '$defs', 'dependentSchemas', 'dependencies'];

/** Every object subschema in a schema position (not in unknown keywords), with its pointer. */
function* subschemas(root: Schema | boolean): Generator<[Schema, string]> {
  const stack: Array<[unknown, string]> = [[root, '']];
  while (stack.length) {
    const [s, at] = stack.pop()!;
    if (!s || typeof s !== 'object' || Array.isArray(s)) continue;
    const schema = s as Schema;
    yield [schema, at];
    for (const k of ONE) if (!Array.isArray(schema[k])) stack.push([schema[k], `${at}/${k}`]);
    for (const k of LIST) if (Array.isArray(schema[k])) (schema[k] as unknown[]).forEach((v, i) => stack.push([v, `${at}/${k}/${i}`]));
    for (const k of MAP) {
      const m = schema[k] as Record<string, unknown> | undefined;
      if (m && typeof m === 'object') for (const [name, v] of Object.entries(m)) stack.push([v, `${at}/${k}/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`]);
    }
  }
}

export interface SchemaError {
  /** JSON pointer of the failing value, `/` for the root. */
  path: string;
  /** The schema keyword that failed (`required`, `type`, `additionalProperties`, ...). */
  keyword: string;
  message: string;
}

/** Keywords whose summary is kept although the errors of their subschemas follow. */
const SUMMARIES = new Set(['anyOf', 'oneOf', 'contains', 'if', 'propertyNames']);
/** Keywords that always list the errors of their subschemas right after their own. */
const PARENTS = new Set([
  'properties',
  'patternProperties',
  'additionalProperties',
  'unevaluatedProperties',
  'items',
  'prefixItems',
  'additionalItems',
  'unevaluatedItems',
  'propertyNames',
  'dependentSchemas',
  '$ref',
  '$recursiveRef',
  'allOf',
]);

/**
 * The library's errors as the check reports them: the failing leaves (a summary such as
 * "Property "a" does not match schema." is dropped when the errors it summarises follow),
 * a `false` subschema named by the keyword that holds it, paths as plain JSON pointers.
 */
export function schemaErrors(units: readonly OutputUnit[]): SchemaError[] {
  const out: SchemaError[] = [];
  for (let i = 0; i < units.length; i++) {
    const e = units[i]!;
    const next = units[i + 1];
    if (next && PARENTS.has(e.keyword) && next.keyword === 'false') {
      out.push({ path: pointer(next.instanceLocation), keyword: e.keyword, message: FALSE[e.keyword] ?? 'is not allowed' });
      i++;
    } else if (e.keyword === 'false') {
      // (its keywordLocation is the instance's: never a summary of what follows)
      out.push({ path: pointer(e.instanceLocation), keyword: 'false', message: 'no value is allowed here (false schema)' });
    } else if (next && !SUMMARIES.has(e.keyword) && next.keywordLocation.startsWith(`${e.keywordLocation}/`)) {
    } else {
      const keyword = e.keyword === 'format' && patternMessage(e.error) ? 'pattern' : e.keyword;
      out.push({ path: pointer(e.instanceLocation), keyword, message: message(e) });
    }
  }
  return out;
}

const FALSE: Record<string, string> = {
  additionalProperties: 'is not allowed (no additional properties)',
  unevaluatedProperties: 'is not allowed (no unevaluated properties)',
  additionalItems: 'is not allowed (no additional items)',
  unevaluatedItems: 'is not allowed (no unevaluated items)',
  propertyNames: 'is not an allowed property name',
};

function message(e: OutputUnit): string {
  let text = e.error.replace(/\.$/, '');
  if (e.keyword === 'format') text = patternMessage(e.error) ?? text;
  // Two of the library's texts say the opposite of the rule.
  if (e.keyword === 'maxProperties') text = text.replace('does not have at least', 'has more than');
  if (e.keyword === 'exclusiveMinimum') text = text.replace('is less than', 'is less than or equal to');
  return text;
}

/** `#/a/b%20c` -> `/a/b c` (the library URI-encodes the pointer). */
function pointer(location: string): string {
  const p = location.replace(/^#/, '');
  try {
    return decodeURIComponent(p) || '/';
  } catch {
    return p || '/';
  }
}

function describe(units: readonly OutputUnit[], max: number): string {
  return schemaErrors(units)
    .slice(0, max)
    .map((e) => `${e.path} ${e.keyword}: ${e.message}`)
    .join('; ');
}

/**
 * JSON as the library can take it: it URI-encodes object keys for error paths (a key with a
 * lone surrogate would throw) and rejects `undefined` (an object property holding it is
 * absent in JSON, and was to Ajv). A throw would make the check an error, which passes
 * unless failOnError, so such values are normalised: copied only when one is found.
 * Iterative, as the value (a request body) may be nested deeper than the stack allows.
 */
export function jsonValue(value: unknown): unknown {
  if (!needsCopy(value)) return value;
  const root: { v?: unknown } = {};
  const stack: Array<[unknown, Record<string, unknown> | unknown[], string | number]> = [[value, root as Record<string, unknown>, 'v']];
  const seen = new Set<object>();
  while (stack.length) {
    const [v, parent, key] = stack.pop()!;
    if (v === null || typeof v !== 'object' || seen.has(v)) {
      (parent as Record<string | number, unknown>)[key] = v === undefined ? null : v;
      continue;
    }
    seen.add(v);
    if (Array.isArray(v)) {
      const copy: unknown[] = new Array<unknown>(v.length);
      (parent as Record<string | number, unknown>)[key] = copy;
      for (let i = 0; i < v.length; i++) stack.push([v[i], copy, i]);
    } else {
      const copy: Record<string, unknown> = {};
      (parent as Record<string | number, unknown>)[key] = copy;
      for (const [k, item] of Object.entries(v)) if (item !== undefined) stack.push([item, copy, k.replace(LONE_SURROGATES, '\uFFFD')]);
    }
  }
  return root.v;
}

/** A UTF-16 surrogate without its pair (`String#isWellFormed` is ES2024, past this project's lib). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g');

function needsCopy(value: unknown): boolean {
  const stack: unknown[] = [value];
  const seen = new Set<object>();
  while (stack.length) {
    const v = stack.pop();
    if (v === undefined) return true;
    if (v === null || typeof v !== 'object' || seen.has(v)) continue;
    seen.add(v);
    if (Array.isArray(v)) {
      for (const item of v) stack.push(item);
    } else {
      for (const [k, item] of Object.entries(v)) {
        if (LONE_SURROGATE.test(k)) return true;
        stack.push(item);
      }
    }
  }
  return false;
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
    const { schema, lookup } = compileSchema(params.schema);
    const result = validate(jsonValue(value), schema, '2020-12', lookup, false);
    if (result.valid) return { verdict: true, explanation: 'The JSON matches the schema.' };
    const errors = schemaErrors(result.errors).slice(0, 20);
    return {
      verdict: false,
      explanation: `The JSON does not match the schema: ${errors.map((e) => `${e.path} ${e.keyword}: ${e.message}`).join('; ')}.`,
      data: { errors },
    };
  },
});

// The SSRF guard admits 127.0.0.1 only when trusted, and config is read once per process:
// the setting is in place before any functions/ module is imported (all imports below are dynamic).
process.env.GATEWAY_TRUSTED_HOSTS = '127.0.0.1,localhost';

import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const { compileCheck } = await import('../../functions/guardrails/definition');
const { CHECK_IDS } = await import('../../functions/guardrails/checks');
const { luhnValid } = await import('../../functions/guardrails/checks/pii-regex');
const { requestTypeOf } = await import('../../functions/guardrails/checks/allowed-request-types');
const { evaluateGuardrails, guardrailError } = await import('../../functions/guardrails/evaluate');
const { GatewayError } = await import('../../functions/shared/errors');
const { compileSchema } = await import('../../functions/guardrails/checks/json-schema');
const { format: schemaFormats } = await import('@cfworker/json-schema');
type GuardrailInput = import('../../functions/guardrails/evaluate').GuardrailInput;
type CheckContext = import('../../functions/guardrails/checks').CheckContext;

function input(text: string, over: Partial<Omit<GuardrailInput, 'request'>> & { request?: Partial<GuardrailInput['request']> } = {}): GuardrailInput {
  return {
    kind: over.kind ?? 'input',
    text,
    ...(over.json !== undefined ? { json: over.json } : {}),
    request: { route: 'chat', metadata: {}, headers: {}, ...over.request },
  };
}

/** Compile `{id, parameters}` like a stored guardrail does, then run the check once. */
async function run(id: string, parameters: Record<string, unknown>, inp: GuardrailInput | string, ctx: CheckContext = {}) {
  const c = compileCheck({ id, parameters }, 0);
  return c.check.run(typeof inp === 'string' ? input(inp) : inp, c.params, ctx);
}

/** The 400 of a bad check spec. */
function paramError(id: string, parameters: Record<string, unknown>) {
  try {
    compileCheck({ id, parameters }, 1);
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    const e = err as InstanceType<typeof GatewayError>;
    expect(e.status).toBe(400);
    expect(e.type).toBe('invalid_request_error');
    return { message: e.message, param: e.param };
  }
  throw new Error(`expected ${id} ${JSON.stringify(parameters)} to be rejected`);
}

describe('registry', () => {
  it('registers every check kind under default.<name>', () => {
    expect([...CHECK_IDS].sort()).toEqual(
      [
        'default.regexMatch',
        'default.contains',
        'default.wordCount',
        'default.sentenceCount',
        'default.characterCount',
        'default.jsonSchema',
        'default.jsonKeys',
        'default.validUrls',
        'default.containsCode',
        'default.endsWith',
        'default.allUppercase',
        'default.allLowercase',
        'default.modelWhitelist',
        'default.requiredMetadataKeys',
        'default.allowedRequestTypes',
        'default.notNull',
        'default.piiRegex',
        'default.webhook',
        'default.jwt',
      ].sort(),
    );
  });

  it('rejects an unknown check id naming the check', () => {
    const err = paramError('default.nope', {});
    expect(err.param).toBe('checks[1].id');
    expect(err.message).toContain('default.nope');
  });

  it('names the check and the parameter for bad parameters', () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['default.regexMatch', { rule: '(' }, 'checks[1].parameters.rule'],
      ['default.regexMatch', {}, 'checks[1].parameters.rule'],
      ['default.regexMatch', { rule: 'a', not: 'yes' }, 'checks[1].parameters.not'],
      ['default.regexMatch', { rule: 'a', colour: 'red' }, 'checks[1].parameters'],
      ['default.regexMatch', { rule: 'a', failOnError: 'yes' }, 'checks[1].parameters.failOnError'],
      ['default.contains', { words: [] }, 'checks[1].parameters.words'],
      ['default.contains', { words: ['a'], operator: 'some' }, 'checks[1].parameters.operator'],
      ['default.wordCount', {}, 'checks[1].parameters.minWords'],
      ['default.wordCount', { minWords: 5, maxWords: 2 }, 'checks[1].parameters.maxWords'],
      ['default.wordCount', { minWords: -1 }, 'checks[1].parameters.minWords'],
      ['default.sentenceCount', { maxSentences: 1.5 }, 'checks[1].parameters.maxSentences'],
      ['default.characterCount', { minCharacters: '3' }, 'checks[1].parameters.minCharacters'],
      ['default.jsonSchema', { schema: { type: 'nonsense' } }, 'checks[1].parameters.schema'],
      ['default.jsonSchema', {}, 'checks[1].parameters.schema'],
      ['default.jsonKeys', { keys: 'a' }, 'checks[1].parameters.keys'],
      ['default.validUrls', { onlyDNS: 1 }, 'checks[1].parameters.onlyDNS'],
      ['default.containsCode', { format: 'Klingon' }, 'checks[1].parameters.format'],
      ['default.endsWith', { suffix: '' }, 'checks[1].parameters.suffix'],
      ['default.allUppercase', { strict: true }, 'checks[1].parameters'],
      ['default.modelWhitelist', { models: [] }, 'checks[1].parameters.models'],
      ['default.requiredMetadataKeys', {}, 'checks[1].parameters.metadataKeys'],
      ['default.allowedRequestTypes', { allowedTypes: [1] }, 'checks[1].parameters.allowedTypes[0]'],
      ['default.piiRegex', { categories: ['dna'] }, 'checks[1].parameters.categories[0]'],
      ['default.webhook', { webhookURL: 'ftp://example.com/' }, 'checks[1].parameters.webhookURL'],
      ['default.webhook', { webhookURL: 'https://user:pw@example.com/' }, 'checks[1].parameters.webhookURL'],
      ['default.webhook', { webhookURL: 'https://example.com/', timeout: 0 }, 'checks[1].parameters.timeout'],
      ['default.webhook', { webhookURL: 'https://example.com/', headers: { 'x-a': 'b\r\nc' } }, 'checks[1].parameters.headers.x-a'],
      ['default.jwt', { headerKey: 'authorization' }, 'checks[1].parameters.jwksUri'],
      ['default.jwt', { jwksUri: 'https://example.com/jwks', headerKey: 'authorization', algorithms: ['HS256'] }, 'checks[1].parameters.algorithms[0]'],
      ['default.jwt', { jwksUri: 'https://example.com/jwks', headerKey: 'authorization', maxTokenAge: 'a while' }, 'checks[1].parameters.maxTokenAge'],
      ['default.jwt', { jwksUri: 'https://example.com/jwks', headerKey: 'authorization', cacheMaxAge: -1 }, 'checks[1].parameters.cacheMaxAge'],
      ['default.jwt', { jwksUri: 'https://example.com/jwks', headerKey: 'authorization', issuer: 'x' }, 'checks[1].parameters'],
    ];
    for (const [id, parameters, param] of cases) {
      const err = paramError(id, parameters);
      expect(err.param, `${id} ${JSON.stringify(parameters)}`).toBe(param);
      expect(err.message).toContain(id);
      expect(err.message).toContain('checks[1]');
    }
  });

  it('accepts failOnError on any check', () => {
    expect(compileCheck({ id: 'default.notNull', parameters: { failOnError: true } }, 0).failOnError).toBe(true);
    expect(compileCheck({ id: 'default.notNull', parameters: {} }, 0).failOnError).toBe(false);
  });
});

describe('text checks', () => {
  it('regexMatch', async () => {
    expect((await run('default.regexMatch', { rule: '\\d{4}' }, 'code 1234')).verdict).toBe(true);
    expect((await run('default.regexMatch', { rule: '\\d{4}' }, 'no code')).verdict).toBe(false);
    expect((await run('default.regexMatch', { rule: '\\d{4}', not: true }, 'code 1234')).verdict).toBe(false);
    expect((await run('default.regexMatch', { rule: '\\d{4}', not: true }, 'no code')).verdict).toBe(true);
    expect((await run('default.regexMatch', { rule: '/hello/i' }, 'HELLO there')).verdict).toBe(true);
    expect((await run('default.regexMatch', { rule: '/hello/g' }, 'hello')).verdict).toBe(true);
    expect((await run('default.regexMatch', { rule: '/hello/g' }, 'hello')).verdict).toBe(true);
  });

  it('contains with any, all and none', async () => {
    const text = 'the quick brown fox';
    expect((await run('default.contains', { words: ['fox', 'dog'] }, text)).verdict).toBe(true);
    expect((await run('default.contains', { words: ['cat', 'dog'] }, text)).verdict).toBe(false);
    expect((await run('default.contains', { words: ['fox', 'quick'], operator: 'all' }, text)).verdict).toBe(true);
    const all = await run('default.contains', { words: ['fox', 'dog'], operator: 'all' }, text);
    expect(all.verdict).toBe(false);
    expect(all.data).toMatchObject({ found: ['fox'], missing: ['dog'] });
    expect((await run('default.contains', { words: ['cat', 'dog'], operator: 'none' }, text)).verdict).toBe(true);
    expect((await run('default.contains', { words: ['fox'], operator: 'none' }, text)).verdict).toBe(false);
  });

  it('wordCount', async () => {
    expect((await run('default.wordCount', { minWords: 2, maxWords: 4 }, '  one two   three ')).verdict).toBe(true);
    expect((await run('default.wordCount', { minWords: 4 }, 'one two three')).verdict).toBe(false);
    expect((await run('default.wordCount', { maxWords: 2 }, 'one two three')).verdict).toBe(false);
    expect((await run('default.wordCount', { maxWords: 0 }, '   ')).verdict).toBe(true);
  });

  it('sentenceCount', async () => {
    const text = 'Pi is 3.14 roughly. Is it? Yes! And a trailing one';
    expect((await run('default.sentenceCount', { minSentences: 4, maxSentences: 4 }, text)).data).toMatchObject({ count: 4 });
    expect((await run('default.sentenceCount', { maxSentences: 3 }, text)).verdict).toBe(false);
    expect((await run('default.sentenceCount', { minSentences: 1 }, 'One.')).verdict).toBe(true);
    expect((await run('default.sentenceCount', { minSentences: 1 }, '...')).verdict).toBe(false);
  });

  it('characterCount counts code points', async () => {
    expect((await run('default.characterCount', { minCharacters: 3, maxCharacters: 3 }, 'a😀b')).verdict).toBe(true);
    expect((await run('default.characterCount', { maxCharacters: 2 }, 'abc')).verdict).toBe(false);
    expect((await run('default.characterCount', { minCharacters: 4 }, 'abc')).verdict).toBe(false);
  });

  it('endsWith ignores trailing whitespace', async () => {
    expect((await run('default.endsWith', { suffix: 'Thanks.' }, 'Hello. Thanks.\n')).verdict).toBe(true);
    expect((await run('default.endsWith', { suffix: 'Thanks.' }, 'Thanks. Hello.')).verdict).toBe(false);
  });

  it('allUppercase and allLowercase', async () => {
    expect((await run('default.allUppercase', {}, 'HELLO, WORLD 42!')).verdict).toBe(true);
    expect((await run('default.allUppercase', {}, 'HELLO, World')).verdict).toBe(false);
    expect((await run('default.allLowercase', {}, 'hello, world 42!')).verdict).toBe(true);
    expect((await run('default.allLowercase', {}, 'hello, World')).verdict).toBe(false);
    expect((await run('default.allLowercase', {}, 'straße')).verdict).toBe(true);
  });

  it('notNull', async () => {
    expect((await run('default.notNull', {}, 'x')).verdict).toBe(true);
    expect((await run('default.notNull', {}, '  \n')).verdict).toBe(false);
    expect((await run('default.notNull', {}, input('', { json: { tool_calls: [] } }))).verdict).toBe(true);
    expect((await run('default.notNull', {}, input('', { json: null }))).verdict).toBe(false);
  });
});

describe('JSON checks', () => {
  const schema = { type: 'object', properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 0 } }, required: ['name'] };

  it('jsonSchema validates the JSON of the text, a fenced block or the given json', async () => {
    expect((await run('default.jsonSchema', { schema }, '{"name":"Ada","age":36}')).verdict).toBe(true);
    expect((await run('default.jsonSchema', { schema }, 'Here:\n```json\n{"name":"Ada"}\n```\nDone.')).verdict).toBe(true);
    expect((await run('default.jsonSchema', { schema }, 'The answer is {"name": "Ada"} as asked')).verdict).toBe(true);
    expect((await run('default.jsonSchema', { schema }, input('not json', { json: { name: 'Ada' } }))).verdict).toBe(true);
    const bad = await run('default.jsonSchema', { schema }, '{"age":-1}');
    expect(bad.verdict).toBe(false);
    expect(bad.explanation).toMatch(/name/);
    expect((bad.data as { errors: unknown[] }).errors.length).toBe(2);
    const none = await run('default.jsonSchema', { schema }, 'no json at all');
    expect(none).toMatchObject({ verdict: false, explanation: 'The text contains no JSON.' });
  });

  it('jsonSchema checks built-in formats and survives schemas sharing an $id', async () => {
    const email = { type: 'object', properties: { email: { type: 'string', format: 'email' } } };
    expect((await run('default.jsonSchema', { schema: email }, '{"email":"a@b.co"}')).verdict).toBe(true);
    expect((await run('default.jsonSchema', { schema: email }, '{"email":"nope"}')).verdict).toBe(false);
    const a = { $id: 'https://example.com/s', type: 'string' };
    const b = { $id: 'https://example.com/s', type: 'number' };
    expect((await run('default.jsonSchema', { schema: a }, '"x"')).verdict).toBe(true);
    expect((await run('default.jsonSchema', { schema: b }, '"x"')).verdict).toBe(false);
  });

  it('jsonSchema names the failing value and rule, leaving out summaries of nested errors', async () => {
    const bad = await run('default.jsonSchema', { schema }, '{"age":-1}');
    expect(bad.data).toEqual({
      errors: [
        { path: '/', keyword: 'required', message: 'Instance does not have required property "name"' },
        { path: '/age', keyword: 'minimum', message: '-1 is less than 0' },
      ],
    });
    expect(bad.explanation).toBe(
      'The JSON does not match the schema: / required: Instance does not have required property "name"; /age minimum: -1 is less than 0.',
    );
    // A `false` subschema is named by the keyword holding it, at the value it rejects.
    const closed = { type: 'object', properties: { a: {} }, additionalProperties: false };
    const extra = await run('default.jsonSchema', { schema: closed }, '{"a":1,"b c/d":2}');
    expect((extra.data as { errors: unknown[] }).errors).toEqual([
      { path: '/b c~1d', keyword: 'additionalProperties', message: 'is not allowed (no additional properties)' },
    ]);
    // anyOf keeps its summary beside the errors of each branch.
    const either = await run('default.jsonSchema', { schema: { anyOf: [{ type: 'number' }, { type: 'string' }] } }, 'null');
    expect((either.data as { errors: Array<{ keyword: string }> }).errors.map((e) => e.keyword)).toEqual(['anyOf', 'type', 'type']);
    const many = await run(
      'default.jsonSchema',
      { schema: { type: 'array', items: { type: 'string' } } },
      JSON.stringify(Array.from({ length: 30 }, (_, i) => i)),
    );
    expect((many.data as { errors: unknown[] }).errors).toHaveLength(20);
  });

  it('jsonSchema checks only its six formats, with its own definitions', async () => {
    const ok = async (format: string, value: string) =>
      (await run('default.jsonSchema', { schema: { type: 'string', format } }, JSON.stringify(value))).verdict;
    expect(await ok('email', 'a@b')).toBe(false);
    expect(await ok('uuid', '123')).toBe(false);
    expect(await ok('date', '2020-13-01')).toBe(false);
    expect(await ok('date', '2020-02-30')).toBe(true); // shape only, as before
    expect(await ok('date-time', '2020-01-01t00:00:00z')).toBe(true);
    expect(await ok('date-time', '2020-01-01')).toBe(false);
    expect(await ok('uri', 'relative/path')).toBe(false);
    expect(await ok('uri', 'https://example.com/a')).toBe(true);
    expect(await ok('ipv4', '256.1.1.1')).toBe(false);
    // The library knows these; the check does not check them (no verdict changes).
    for (const format of ['hostname', 'ipv6', 'time', 'duration', 'regex', 'url', '__proto__', 'constructor', 'hasOwnProperty']) {
      expect(await ok(format, 'not valid at all ('), format).toBe(true);
    }
  });

  it('jsonSchema rejects, when written, a schema it could not apply', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ type: 'nonsense' }, '/type'],
      [{ properties: { a: { minLength: -1 } } }, '/properties/a/minLength'],
      [{ $ref: '#/definitions/missing' }, `can't resolve reference "#/definitions/missing"`],
      [{ properties: { a: { $ref: 'other.json' } } }, `can't resolve reference "other.json" (at /properties/a)`],
      [{ type: 'string', pattern: '(' }, 'missing closing ): `(` (at /pattern'],
      [{ type: 'string', pattern: '(a)\\1' }, 'RE2 syntax: no backreferences or lookaround'],
      [{ patternProperties: { '(': {} } }, 'at /patternProperties'],
      [{ $schema: 'https://json-schema.org/draft/2020-12/schema' }, 'unsupported $schema'],
      [{ nullable: true }, '"nullable" cannot be used without "type"'],
      [{ nullable: 'yes', type: 'string' }, '/nullable'],
      [{ prefixItems: 5 }, '/prefixItems'],
      [{ dependentRequired: { a: 'b' } }, '/dependentRequired/a'],
      [{ $id: 'x', properties: { a: { $id: 'x' } } }, 'two subschemas have the same $id'],
    ];
    for (const [schema, text] of cases) {
      const err = paramError('default.jsonSchema', { schema });
      expect(err.param, JSON.stringify(schema)).toBe('checks[1].parameters.schema');
      expect(err.message, JSON.stringify(schema)).toContain('expected a valid JSON Schema');
      expect(err.message, JSON.stringify(schema)).toContain(text);
    }
    // Unknown keywords are free, and what is under them is not a schema.
    expect(() => compileCheck({ id: 'default.jsonSchema', parameters: { schema: { 'x-doc': { $ref: '#/nowhere', pattern: '(' } } } }, 0)).not.toThrow();
    for (const $schema of ['http://json-schema.org/draft-07/schema#', 'http://json-schema.org/draft-07/schema', 'http://json-schema.org/schema#']) {
      expect(() => compileCheck({ id: 'default.jsonSchema', parameters: { schema: { $schema } } }, 0)).not.toThrow();
    }
  });

  it('jsonSchema: `pattern` runs in linear time and is reported as a pattern, also beside a format', async () => {
    const check = async (schema: Record<string, unknown>, json: string) => run('default.jsonSchema', { schema }, json);
    // On V8's engine this pattern against this value takes minutes.
    const slow = await check({ type: 'string', pattern: '^(a+)+$' }, JSON.stringify(`${'a'.repeat(50_000)}!`));
    expect(slow.verdict).toBe(false);
    expect(slow.explanation).toContain('/ pattern: String does not match pattern "^(a+)+$"');
    expect((await check({ type: 'string', pattern: '^(a+)+$' }, '"aaaa"')).verdict).toBe(true);
    const both = { type: 'object', properties: { id: { type: 'string', format: 'uuid', pattern: '^0' } } };
    expect((await check(both, '{"id": "0d1f7a3e-0000-4000-8000-000000000000"}')).verdict).toBe(true);
    const wrongPattern = await check(both, '{"id": "1d1f7a3e-0000-4000-8000-000000000000"}');
    expect(wrongPattern.verdict).toBe(false);
    expect(wrongPattern.explanation).toContain('/id pattern: String does not match pattern "^0"');
    const wrongFormat = await check(both, '{"id": "0-not-a-uuid"}');
    expect(wrongFormat.explanation).toContain('/id format: String does not match format "uuid"');
    // Patterns apply to strings only, as before.
    expect((await check({ pattern: '^x' }, '42')).verdict).toBe(true);
  });

  it('jsonSchema: the private formats of patterns leave with their schema from the cache (callers cannot grow the table)', () => {
    const privateFormats = () => Object.keys(schemaFormats).filter((k) => k.startsWith('\u0000pattern:')).length;
    for (let i = 0; i < 450; i++) compileSchema({ type: 'string', pattern: `^x${i}$`, maxLength: 1_000 + i });
    expect(privateFormats()).toBeLessThanOrEqual(200);
    expect(privateFormats()).toBeGreaterThan(0);
    // A refused schema leaves nothing behind.
    const before = privateFormats();
    expect(() => compileSchema({ properties: { a: { pattern: 'a' }, b: { $ref: '#/nowhere' } } })).toThrow(/can't resolve/);
    expect(privateFormats()).toBe(before);
  });

  it('jsonSchema applies draft-07 with the 2019-09 / 2020-12 keywords and OpenAPI nullable', async () => {
    const verdict = async (s: Record<string, unknown>, json: string) => (await run('default.jsonSchema', { schema: s }, json)).verdict;
    // $ref with siblings, $defs, $anchor, recursion, the draft-07 meta-schema by its id
    expect(await verdict({ $defs: { s: { type: 'string' } }, $ref: '#/$defs/s', maxLength: 2 }, '"abc"')).toBe(false);
    expect(await verdict({ properties: { a: { $ref: '#node' } }, $defs: { n: { $anchor: 'node', type: 'number' } } }, '{"a":"x"}')).toBe(false);
    const tree = { type: 'object', properties: { v: { type: 'number' }, kids: { type: 'array', items: { $ref: '#' } } } };
    expect(await verdict(tree, '{"v":1,"kids":[{"v":2,"kids":[{"v":"3"}]}]}')).toBe(false);
    expect(await verdict(tree, '{"v":1,"kids":[{"v":2,"kids":[{"v":3}]}]}')).toBe(true);
    expect(await verdict({ $ref: 'http://json-schema.org/draft-07/schema#' }, '{"type":"nonsense"}')).toBe(false);
    expect(await verdict({ $ref: 'http://json-schema.org/draft-07/schema#' }, '{"type":"string"}')).toBe(true);
    // 2019-09 / 2020-12 keywords are applied (Ajv's draft-07 class ignored them)
    expect(await verdict({ properties: { a: {} }, unevaluatedProperties: false }, '{"a":1,"b":2}')).toBe(false);
    expect(await verdict({ dependentRequired: { a: ['b'] } }, '{"a":1}')).toBe(false);
    expect(await verdict({ prefixItems: [{ type: 'string' }] }, '[1]')).toBe(false);
    expect(await verdict({ contains: { type: 'string' }, minContains: 2 }, '["a",1]')).toBe(false);
    // draft-07 tuples
    expect(await verdict({ items: [{ type: 'string' }], additionalItems: false }, '["a",1]')).toBe(false);
    // nullable: true adds null to `type` (and nothing else)
    const nullable = { type: 'object', properties: { a: { type: 'number', nullable: true }, b: { type: 'string', nullable: true, enum: ['x'] } } };
    expect(await verdict(nullable, '{"a":null}')).toBe(true);
    expect(await verdict(nullable, '{"a":"1"}')).toBe(false);
    expect(await verdict(nullable, '{"b":null}')).toBe(false);
    expect(nullable.properties.a).toEqual({ type: 'number', nullable: true }); // the caller's schema is not changed
    // multipleOf is exact in decimal (Ajv's float division said 0.07 is not a multiple of 0.01)
    expect(await verdict({ multipleOf: 0.01 }, '0.07')).toBe(true);
    expect(await verdict({ multipleOf: 0.01 }, '0.075')).toBe(false);
  });

  it('jsonSchema validates JSON the validator could not take as is', async () => {
    const closed = { type: 'object', properties: { a: { type: 'number' } }, additionalProperties: false };
    // A key with a lone surrogate (the validator URI-encodes keys for error paths).
    const lone = await run('default.jsonSchema', { schema: closed }, '{"a":1,"\\ud800":2}');
    expect(lone).toMatchObject({ verdict: false, data: { errors: [{ path: '/\ufffd', keyword: 'additionalProperties' }] } });
    // `undefined` in a caller's json: absent, as in JSON.
    const json = { a: 1, b: undefined, c: [1, undefined] };
    expect(
      (await run('default.jsonSchema', { schema: { ...closed, properties: { a: {}, c: { items: { type: ['number', 'null'] } } } } }, input('', { json })))
        .verdict,
    ).toBe(true);
    expect((await run('default.jsonSchema', { schema: { required: ['b'] } }, input('', { json }))).verdict).toBe(false);
    expect(json).toEqual({ a: 1, b: undefined, c: [1, undefined] });
  });

  it('jsonKeys', async () => {
    const text = '{"a":1,"b":2}';
    expect((await run('default.jsonKeys', { keys: ['a', 'z'] }, text)).verdict).toBe(true);
    expect((await run('default.jsonKeys', { keys: ['a', 'z'], operator: 'all' }, text)).verdict).toBe(false);
    expect((await run('default.jsonKeys', { keys: ['a', 'b'], operator: 'all' }, text)).verdict).toBe(true);
    expect((await run('default.jsonKeys', { keys: ['z'], operator: 'none' }, text)).verdict).toBe(true);
    expect((await run('default.jsonKeys', { keys: ['a'], operator: 'none' }, text)).verdict).toBe(false);
    expect((await run('default.jsonKeys', { keys: ['a'] }, '[1,2]')).verdict).toBe(false);
  });
});

describe('validUrls', () => {
  it('passes well-formed public URLs and text without URLs', async () => {
    const r = await run('default.validUrls', {}, 'See https://example.com/a?b=c, and (http://docs.example.org/x).');
    expect(r.verdict).toBe(true);
    expect(r.data).toMatchObject({ validUrls: ['https://example.com/a?b=c', 'http://docs.example.org/x'] });
    expect((await run('default.validUrls', {}, 'no links here')).verdict).toBe(true);
  });

  it('fails malformed hosts', async () => {
    for (const text of ['go to https://exa_mple.com', 'http://nodots/', 'https://example.c0m/', 'https://-bad-.com/']) {
      expect((await run('default.validUrls', { onlyDNS: true }, text)).verdict, text).toBe(false);
    }
  });

  it('the full check refuses internal hosts, onlyDNS does not', async () => {
    const text = 'metadata at http://169.254.169.254/latest and http://10.0.0.5/';
    const full = await run('default.validUrls', {}, text);
    expect(full.verdict).toBe(false);
    expect((full.data as { invalidUrls: unknown[] }).invalidUrls).toHaveLength(2);
    expect((await run('default.validUrls', { onlyDNS: true }, text)).verdict).toBe(true);
    // A trusted host is admitted.
    expect((await run('default.validUrls', {}, 'http://127.0.0.1:8080/x')).verdict).toBe(true);
    expect((await run('default.validUrls', {}, 'http://127.0.0.1:8080/x', { trustedHosts: [] })).verdict).toBe(false);
  });
});

describe('containsCode', () => {
  it('uses the fence language tag', async () => {
    const text = 'Try this:\n```python\nprint("hi")\n```\n';
    expect((await run('default.containsCode', { format: 'Python' }, text)).verdict).toBe(true);
    expect((await run('default.containsCode', { format: 'python' }, text)).verdict).toBe(true);
    expect((await run('default.containsCode', { format: 'SQL' }, text)).verdict).toBe(false);
    expect((await run('default.containsCode', { format: 'TypeScript' }, '```ts\nconst a = 1;\n```')).verdict).toBe(true);
  });

  it('classifies untagged blocks by heuristics', async () => {
    const cases: Array<[string, string]> = [
      ['SQL', 'SELECT name FROM users WHERE id = 1;'],
      ['Python', 'def add(a, b):\n    return a + b'],
      ['TypeScript', 'interface User { name: string }'],
      ['JavaScript', 'const add = (a, b) => a + b;\nconsole.log(add(1, 2));'],
      ['Java', 'public class Main {\n  public static void main(String[] args) {}\n}'],
    ];
    for (const [format, code] of cases) {
      const text = `Here you go:\n\`\`\`\n${code}\n\`\`\`\nDone.`;
      expect((await run('default.containsCode', { format }, text)).verdict, format).toBe(true);
    }
  });

  it('fails without code blocks', async () => {
    const r = await run('default.containsCode', { format: 'SQL' }, 'SELECT is a word, but this is prose.');
    expect(r).toMatchObject({ verdict: false, explanation: 'The text contains no code block.' });
  });
});

describe('request checks', () => {
  it('modelWhitelist', async () => {
    expect((await run('default.modelWhitelist', { models: ['gpt-4o'] }, input('x', { request: { model: 'gpt-4o' } }))).verdict).toBe(true);
    expect((await run('default.modelWhitelist', { models: ['gpt-4o'] }, input('x', { request: { model: 'gpt-3.5' } }))).verdict).toBe(false);
    expect((await run('default.modelWhitelist', { models: ['gpt-4o'] }, input('x'))).verdict).toBe(false);
  });

  it('requiredMetadataKeys', async () => {
    const inp = input('x', { request: { metadata: { _user: 'u1', team: 'a' } } });
    expect((await run('default.requiredMetadataKeys', { metadataKeys: ['_user', 'team'] }, inp)).verdict).toBe(true);
    const missing = await run('default.requiredMetadataKeys', { metadataKeys: ['_user', 'env'] }, inp);
    expect(missing).toMatchObject({ verdict: false, data: { missing: ['env'] } });
  });

  it('allowedRequestTypes takes type names or paths', async () => {
    expect((await run('default.allowedRequestTypes', { allowedTypes: ['chat'] }, input('x'))).verdict).toBe(true);
    expect((await run('default.allowedRequestTypes', { allowedTypes: ['embeddings'] }, input('x'))).verdict).toBe(false);
    const byPath = input('x', { request: { route: '/v1/embeddings' } });
    expect((await run('default.allowedRequestTypes', { allowedTypes: ['embeddings'] }, byPath)).verdict).toBe(true);
    expect(requestTypeOf('/v1/chat/completions')).toBe('chat');
    expect(requestTypeOf('/v1/files/abc')).toBe('proxy');
    expect(requestTypeOf('proxy')).toBe('proxy');
  });
});

describe('piiRegex', () => {
  const text = 'Mail ada@example.com or call +44 20 7946 0958. Card 4111 1111 1111 1111, SSN 123-45-6789, host 192.168.1.20.';

  it('detects every category without echoing values', async () => {
    const r = await run('default.piiRegex', {}, text);
    expect(r.verdict).toBe(false);
    expect(r.data).toMatchObject({ detected: { email: 1, phone: 1, credit_card: 1, ssn: 1, ip_address: 1 } });
    expect(JSON.stringify(r)).not.toContain('ada@example.com');
    expect(JSON.stringify(r)).not.toContain('4111');
  });

  it('redacts into transformed text and passes', async () => {
    const r = await run('default.piiRegex', { redact: true }, text);
    expect(r.verdict).toBe(true);
    expect(r.transformed).toBe('Mail [REDACTED_EMAIL] or call [REDACTED_PHONE]. Card [REDACTED_CREDIT_CARD], SSN [REDACTED_SSN], host [REDACTED_IP_ADDRESS].');
  });

  it('validates card numbers with Luhn and honours categories', async () => {
    expect(luhnValid('4111111111111111')).toBe(true);
    expect(luhnValid('4111111111111112')).toBe(false);
    expect((await run('default.piiRegex', { categories: ['credit_card'] }, 'order 4111 1111 1111 1112')).verdict).toBe(true);
    expect((await run('default.piiRegex', { categories: ['credit_card'] }, 'card 5500-0000-0000-0004')).verdict).toBe(false);
    expect((await run('default.piiRegex', { categories: ['email'] }, 'call 555-123-4567')).verdict).toBe(true);
    expect((await run('default.piiRegex', {}, 'Meet on 2024-05-01 at 10:30, room 42.')).verdict).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------
// Local servers: a webhook and a JWKS endpoint on 127.0.0.1.

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;
let server: http.Server;
let base: string;
const routes = new Map<string, Handler>();
const hits = new Map<string, number>();
const received: Array<{ path: string; headers: http.IncomingHttpHeaders; body: string }> = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0]!;
      const body = Buffer.concat(chunks).toString('utf8');
      hits.set(path, (hits.get(path) ?? 0) + 1);
      received.push({ path, headers: req.headers, body });
      const handler = routes.get(path);
      if (!handler) {
        res.writeHead(404).end();
        return;
      }
      handler(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const sendJson = (res: ServerResponse, status: number, body: unknown) =>
  res.writeHead(status, { 'content-type': 'application/json' }).end(typeof body === 'string' ? body : JSON.stringify(body));

describe('webhook', () => {
  it('posts {input, kind, metadata} with the configured headers and uses the verdict', async () => {
    routes.set('/hook/ok', (_req, res, body) => {
      const parsed = JSON.parse(body) as { input: string };
      sendJson(res, 200, { verdict: !parsed.input.includes('bad'), explanation: 'by the hook' });
    });
    const params = { webhookURL: `${base}/hook/ok`, headers: { 'x-hook-secret': 's3cret' } };
    const inp = input('all good', { kind: 'output', request: { metadata: { team: 'a' } } });
    expect(await run('default.webhook', params, inp)).toEqual({ verdict: true, explanation: 'by the hook' });
    const sent = received.filter((r) => r.path === '/hook/ok').at(-1)!;
    expect(JSON.parse(sent.body)).toEqual({ input: 'all good', kind: 'output', metadata: { team: 'a' } });
    expect(sent.headers['x-hook-secret']).toBe('s3cret');
    expect(sent.headers['content-type']).toBe('application/json');
    expect((await run('default.webhook', params, 'this is bad')).verdict).toBe(false);
  });

  it('throws (an error, not a verdict) on a non-2xx status, a non-JSON answer, a missing verdict or a timeout', async () => {
    routes.set('/hook/500', (_req, res) => sendJson(res, 500, { verdict: true }));
    routes.set('/hook/text', (_req, res) => res.writeHead(200).end('yes'));
    routes.set('/hook/shape', (_req, res) => sendJson(res, 200, { verdict: 'yes' }));
    routes.set('/hook/silent', () => undefined); // never answers
    await expect(run('default.webhook', { webhookURL: `${base}/hook/500` }, 'x')).rejects.toThrow(/status 500/);
    await expect(run('default.webhook', { webhookURL: `${base}/hook/text` }, 'x')).rejects.toThrow(/not JSON/);
    await expect(run('default.webhook', { webhookURL: `${base}/hook/shape` }, 'x')).rejects.toThrow(/verdict/);
    await expect(run('default.webhook', { webhookURL: `${base}/hook/silent`, timeout: 100 }, 'x')).rejects.toThrow();
  });

  it('is refused by the SSRF guard when the host is not trusted, without sending anything', async () => {
    routes.set('/hook/ssrf', (_req, res) => sendJson(res, 200, { verdict: true }));
    const before = hits.get('/hook/ssrf') ?? 0;
    const err = await run('default.webhook', { webhookURL: `${base}/hook/ssrf` }, 'x', { trustedHosts: [] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toMatchObject({ code: 'blocked_custom_host', param: 'webhookURL' });
    expect(hits.get('/hook/ssrf') ?? 0).toBe(before);
  });
});

describe('jwt', () => {
  let rsa: { privateKey: CryptoKey; jwk: JWK };
  let ec: { privateKey: CryptoKey; jwk: JWK };
  const now = () => Math.floor(Date.now() / 1000);

  beforeAll(async () => {
    const r = await generateKeyPair('RS256');
    const e = await generateKeyPair('ES256');
    rsa = { privateKey: r.privateKey, jwk: { ...(await exportJWK(r.publicKey)), kid: 'rsa-1', alg: 'RS256', use: 'sig' } };
    ec = { privateKey: e.privateKey, jwk: { ...(await exportJWK(e.publicKey)), kid: 'ec-1', alg: 'ES256', use: 'sig' } };
  });

  /** A JWKS path of its own per test, so fetch counts and key-set caches do not mix. */
  function jwks(path: string): string {
    routes.set(path, (_req, res) => sendJson(res, 200, { keys: [rsa.jwk, ec.jwk] }));
    return `${base}${path}`;
  }

  async function token(opts: { alg?: 'RS256' | 'ES256'; iat?: number; exp?: number; kid?: string } = {}) {
    const alg = opts.alg ?? 'RS256';
    const key = alg === 'RS256' ? rsa : ec;
    return new SignJWT({ scope: 'chat' })
      .setProtectedHeader({ alg, kid: opts.kid ?? key.jwk.kid! })
      .setSubject('user-1')
      .setIssuedAt(opts.iat ?? now())
      .setExpirationTime(opts.exp ?? now() + 3600)
      .sign(key.privateKey);
  }

  const withToken = (t: string, header = 'authorization') => input('hello', { request: { headers: { [header]: `Bearer ${t}` } } });
  const params = (jwksUri: string, over: Record<string, unknown> = {}) => ({
    jwksUri,
    headerKey: 'Authorization',
    algorithms: ['RS256'],
    cacheMaxAge: 3600,
    clockTolerance: 0,
    maxTokenAge: '1h',
    ...over,
  });

  it('passes a valid token and caches the key set (two verifications, one fetch)', async () => {
    const uri = jwks('/jwks/valid');
    const first = await run('default.jwt', params(uri), withToken(await token()));
    expect(first).toEqual({ verdict: true, explanation: 'The token is valid.' });
    expect((await run('default.jwt', params(uri), withToken(await token()))).verdict).toBe(true);
    expect(hits.get('/jwks/valid')).toBe(1);
  });

  it('reads the token from the header named headerKey, with or without Bearer', async () => {
    const uri = jwks('/jwks/header');
    const t = await token();
    expect((await run('default.jwt', params(uri, { headerKey: 'x-user-token' }), input('x', { request: { headers: { 'x-user-token': t } } }))).verdict).toBe(
      true,
    );
    const missing = await run('default.jwt', params(uri, { headerKey: 'x-user-token' }), withToken(t));
    expect(missing).toMatchObject({ verdict: false });
    expect(missing.explanation).toContain('x-user-token');
  });

  it('fails an expired token, and clockTolerance admits a recently expired one', async () => {
    const uri = jwks('/jwks/expired');
    const t = await token({ iat: now() - 120, exp: now() - 30 });
    const expired = await run('default.jwt', params(uri), withToken(t));
    expect(expired).toMatchObject({ verdict: false, data: { code: 'ERR_JWT_EXPIRED' } });
    expect(JSON.stringify(expired)).not.toContain(t);
    expect((await run('default.jwt', params(uri, { clockTolerance: 300 }), withToken(t))).verdict).toBe(true);
  });

  it('fails a token signed with an algorithm that is not allowed', async () => {
    const uri = jwks('/jwks/alg');
    const t = await token({ alg: 'ES256' });
    expect(await run('default.jwt', params(uri), withToken(t))).toMatchObject({ verdict: false, data: { code: 'ERR_JOSE_ALG_NOT_ALLOWED' } });
    expect((await run('default.jwt', params(uri, { algorithms: ['ES256'] }), withToken(t))).verdict).toBe(true);
  });

  it('fails a token older than maxTokenAge', async () => {
    const uri = jwks('/jwks/age');
    const t = await token({ iat: now() - 2 * 3600 });
    const old = await run('default.jwt', params(uri, { maxTokenAge: '1h' }), withToken(t));
    expect(old).toMatchObject({ verdict: false, data: { code: 'ERR_JWT_EXPIRED' } });
    expect(old.explanation).toContain('"iat"');
    expect((await run('default.jwt', params(uri, { maxTokenAge: '3 hours' }), withToken(t))).verdict).toBe(true);
  });

  it('fails a forged or malformed token and one without a token', async () => {
    const uri = jwks('/jwks/forged');
    const t = await token();
    const [h, p] = t.split('.');
    const forgedPayload = Buffer.from(JSON.stringify({ sub: 'admin', iat: now(), exp: now() + 60 })).toString('base64url');
    expect((await run('default.jwt', params(uri), withToken(`${h}.${forgedPayload}.${t.split('.')[2]}`))).verdict).toBe(false);
    expect((await run('default.jwt', params(uri), withToken(`${h}.${p}`))).verdict).toBe(false);
    expect((await run('default.jwt', params(uri), input('x'))).verdict).toBe(false);
  });

  it('throws when the key set cannot be fetched or its host is not trusted', async () => {
    routes.set('/jwks/broken', (_req, res) => sendJson(res, 500, {}));
    await expect(run('default.jwt', params(`${base}/jwks/broken`), withToken(await token()))).rejects.toThrow();
    const uri = jwks('/jwks/untrusted');
    const err = await run('default.jwt', params(uri), withToken(await token()), { trustedHosts: [] }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'blocked_custom_host', param: 'jwksUri' });
    expect(hits.get('/jwks/untrusted') ?? 0).toBe(0);
  });
});

describe('evaluateGuardrails with inline guardrails', () => {
  const contains = (words: string[], operator = 'none') => ({ id: 'default.contains', parameters: { words, operator } });

  it('pass, warn and block', async () => {
    const block = { id: 'no-secrets', checks: [contains(['secret'])], actions: { onFail: 'block', message: 'No secrets, please.' } };
    const warn = { id: 'no-swearing', checks: [contains(['darn'])], actions: { onFail: 'warn' } };
    const pass = await evaluateGuardrails([block, warn], 'ws-unused', input('hello'));
    expect(pass.verdict).toBe('pass');
    expect(pass.hook_results.map((h) => [h.id, h.verdict, h.deny])).toEqual([
      ['no-secrets', true, true],
      ['no-swearing', true, false],
    ]);
    const warned = await evaluateGuardrails([block, warn], 'ws-unused', input('oh darn'));
    expect(warned.verdict).toBe('warn');
    const blocked = await evaluateGuardrails([block, warn], 'ws-unused', input('the secret is darn'));
    expect(blocked.verdict).toBe('block');
    expect(blocked.hook_results[0]!.checks[0]).toMatchObject({ id: 'default.contains', verdict: false });
    expect(typeof blocked.hook_results[0]!.checks[0]!.execution_time_ms).toBe('number');
    const err = guardrailError(blocked);
    expect(err.status).toBe(446);
    expect(err.toBody()).toEqual({
      error: { message: 'No secrets, please.', type: 'guardrail_error', param: null, code: 'guardrail_blocked' },
      hook_results: blocked.hook_results,
    });
  });

  it('deny: true blocks whatever onFail says; the default message names the guardrail and check', async () => {
    const g = { checks: [contains(['x'])], actions: { onFail: 'log', deny: true } };
    const out = await evaluateGuardrails([g], 'ws-unused', input('x'));
    expect(out.verdict).toBe('block');
    expect(guardrailError(out).message).toBe("The request was blocked by guardrail 'inline_0': default.contains failed.");
  });

  it('accepts the shorthand {"default.<check>": params, deny}', async () => {
    const out = await evaluateGuardrails([{ 'default.allLowercase': {}, deny: true }], 'ws-unused', input('Hello'));
    expect(out.verdict).toBe('block');
    expect((await evaluateGuardrails([{ 'default.allLowercase': {} }], 'ws-unused', input('Hello'))).verdict).toBe('warn');
  });

  it('failOnError: an exception passes with a note by default, fails with failOnError', async () => {
    const hook = (failOnError?: boolean) => ({
      checks: [{ id: 'default.webhook', parameters: { webhookURL: `${base}/hook/none`, ...(failOnError !== undefined ? { failOnError } : {}) } }],
      actions: { onFail: 'block' },
    });
    const lenient = await evaluateGuardrails([hook()], 'ws-unused', input('x'));
    expect(lenient.verdict).toBe('pass');
    expect(lenient.hook_results[0]!.checks[0]).toMatchObject({ verdict: true, error: expect.stringContaining('404') });
    const strict = await evaluateGuardrails([hook(true)], 'ws-unused', input('x'));
    expect(strict.verdict).toBe('block');
    expect(strict.hook_results[0]!.checks[0]).toMatchObject({ verdict: false, error: expect.any(String) });
  });

  it('runs the checks of all guardrails concurrently', async () => {
    // The server answers only once both webhook calls are waiting: sequential checks would
    // time out (and show an error note) instead of both passing cleanly.
    const waiting: ServerResponse[] = [];
    routes.set('/hook/together', (_req, res) => {
      waiting.push(res);
      if (waiting.length === 2) for (const r of waiting.splice(0)) sendJson(r, 200, { verdict: true });
    });
    const g = () => ({
      checks: [{ id: 'default.webhook', parameters: { webhookURL: `${base}/hook/together`, timeout: 10_000 } }],
      actions: { onFail: 'block' },
    });
    const out = await evaluateGuardrails([g(), g()], 'ws-unused', input('x'));
    expect(out.verdict).toBe('pass');
    expect(out.hook_results.flatMap((h) => h.checks.map((c) => c.error))).toEqual([undefined, undefined]);
  });

  it('names inline guardrails by position unless they carry an id', async () => {
    const g = { checks: [{ id: 'default.notNull', parameters: {} }], actions: { onFail: 'block' } };
    const out = await evaluateGuardrails([g, g, { ...g, id: 'named' }], 'ws-unused', input('x'));
    expect(out.hook_results.map((h) => h.id)).toEqual(['inline_0', 'inline_1', 'named']);
  });

  it('chains transformations in order and reports them', async () => {
    const emails = { checks: [{ id: 'default.piiRegex', parameters: { categories: ['email'], redact: true } }], actions: { onFail: 'block' } };
    const phones = {
      checks: [
        { id: 'default.piiRegex', parameters: { categories: ['phone'], redact: true } },
        { id: 'default.notNull', parameters: {} },
      ],
      actions: { onFail: 'block' },
    };
    const out = await evaluateGuardrails([emails, phones], 'ws-unused', input('ada@example.com, +1 415 555 0100'));
    expect(out.verdict).toBe('pass');
    expect(out.transformedText).toBe('[REDACTED_EMAIL], [REDACTED_PHONE]');
    expect(out.hook_results[0]!.transformed).toBe('[REDACTED_EMAIL], +1 415 555 0100');
    expect(out.hook_results[1]!.transformed).toBe('[REDACTED_EMAIL], [REDACTED_PHONE]');
    const clean = await evaluateGuardrails([emails], 'ws-unused', input('nothing here'));
    expect(clean.transformedText).toBeUndefined();
  });

  it('validates inline guardrails like stored ones, naming the field', async () => {
    const bad = [{ checks: [{ id: 'default.regexMatch', parameters: { rule: '(' } }], actions: { onFail: 'block' } }];
    const err = await evaluateGuardrails(bad, 'ws-unused', input('x'), { param: 'input_guardrails' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 400, param: 'input_guardrails[0].checks[0].parameters.rule' });
    const noActions = await evaluateGuardrails([{ checks: [] }], 'ws-unused', input('x')).catch((e: unknown) => e);
    expect(noActions).toMatchObject({ status: 400 });
  });
});

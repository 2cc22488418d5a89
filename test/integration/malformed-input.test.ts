import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { call, startTestGateway } from '../support/gateway';

/**
 * Every operation of docs/openapi.json, sent what a careless or hostile caller sends: bodies
 * that are not JSON, not objects, nested 400 deep or carrying `__proto__`; each documented
 * body property with a value of the wrong kind (null, numbers out of range, a 70 KB string,
 * arrays, objects); ids that are unknown, 600 characters long or hold escapes; list queries
 * with bad limits, orders and cursors; other content types. The answer is never a 5xx and
 * every 4xx is an error object with a message (docs/api.md, "Errors"); afterwards the
 * gateway still serves. The per-route tests check which field each message names.
 */

interface Schema {
  $ref?: string;
  properties?: Record<string, unknown>;
}
interface Operation {
  method: string;
  path: string;
  requestBody?: { content?: Record<string, { schema?: Schema }> };
}

const doc = JSON.parse(readFileSync('docs/openapi.json', 'utf8')) as {
  paths: Record<string, Record<string, Omit<Operation, 'method' | 'path'>>>;
  components: { schemas: Record<string, Schema> };
};
const resolveSchema = (s: Schema | undefined) => (s?.$ref ? doc.components.schemas[s.$ref.split('/').pop()!] : s);

const OPERATIONS: Operation[] = Object.entries(doc.paths).flatMap(([path, item]) =>
  Object.entries(item)
    .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
    .map(([method, op]) => ({ ...op, method: method.toUpperCase(), path })),
);

const nested = (depth: number): unknown => (depth === 0 ? 1 : { a: nested(depth - 1) });
const BODIES = [
  '{"model":',
  '[]',
  'null',
  '"text"',
  '12',
  '{}',
  JSON.stringify(nested(400)),
  '{"__proto__":{"role":"org-admin"},"constructor":{"prototype":{"x":1}}}',
];
const WRONG_VALUES: unknown[] = [null, 7, -1, 1e308, '', 'x', true, [], {}, [1, 'a', null], { a: { b: [] } }, 'A'.repeat(70_000)];
const IDS = ['malformed-unknown-id', 'a'.repeat(600), '..%2F..%2F%00%C3%BC'];
const LIST_QUERIES = ['?limit=-1', '?limit=abc', '?limit=1e9', '?after=%00', '?order=sideways', `?before=${'z'.repeat(3000)}`, '?limit=1&limit=2'];

interface Probe {
  method: string;
  url: string;
  body?: string;
  contentType?: string;
}

function probesOf(op: Operation): Probe[] {
  const templated = op.path.includes('{');
  const urls = templated ? IDS.map((id) => op.path.replace(/\{[^}]+\}/g, id)) : [op.path];
  if (op.method === 'GET' || op.method === 'DELETE') {
    return [...urls.map((url) => ({ method: op.method, url })), ...(templated ? [] : LIST_QUERIES.map((q) => ({ method: op.method, url: op.path + q })))];
  }
  const [first, ...others] = urls as [string, ...string[]];
  const schema = resolveSchema(op.requestBody?.content?.['application/json']?.schema);
  // Two wrong values per property, taken in turn from the list, so the operation's properties
  // together meet every kind.
  const wrongTyped = Object.keys(schema?.properties ?? {}).flatMap((name, i) =>
    [0, 1].map((k) => JSON.stringify({ [name]: WRONG_VALUES[(2 * i + k) % WRONG_VALUES.length] })),
  );
  return [
    ...[...BODIES, ...wrongTyped].map((body) => ({ method: op.method, url: first, body })),
    { method: op.method, url: first, body: 'model=x', contentType: 'application/x-www-form-urlencoded' },
    { method: op.method, url: first, body: '{"model":"x"}', contentType: 'text/plain' },
    ...others.map((url) => ({ method: op.method, url, body: '{}' })),
  ];
}

let gw: LocalGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => {
  await gw?.stop();
});

async function send(probe: Probe): Promise<string | undefined> {
  const res = await fetch(gw.url + probe.url, {
    method: probe.method,
    headers: { 'x-gateway-api-key': gw.adminKey, 'content-type': probe.contentType ?? 'application/json' },
    body: probe.body,
  });
  const text = await res.text();
  const what = `${res.status} ${probe.method} ${probe.url.slice(0, 120)} ${probe.body?.slice(0, 80) ?? ''} -> ${text.slice(0, 300)}`;
  if (res.status >= 500) return what;
  if (res.status >= 400) {
    try {
      const message = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
      if (typeof message !== 'string' || message === '') return `no error message: ${what}`;
    } catch {
      return `not JSON: ${what}`;
    }
  }
  return undefined;
}

describe('malformed input on every documented operation', () => {
  it('is answered with a 4xx error object (or accepted), never a 5xx; the gateway serves on', { timeout: 240_000 }, async () => {
    const probes = OPERATIONS.flatMap(probesOf);
    expect(OPERATIONS.length).toBeGreaterThan(100);
    const failures: string[] = [];
    const queue = [...probes];
    // A few callers at once, as clients are.
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let probe = queue.shift(); probe; probe = queue.shift()) {
          const failure = await send(probe);
          if (failure) failures.push(failure);
        }
      }),
    );
    expect(failures, `${failures.length} of ${probes.length} answers`).toEqual([]);
    const after = await call(gw, 'GET', '/v1/workspaces');
    expect(after.status).toBe(200);
  });
});

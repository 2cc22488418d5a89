import { inject } from 'vitest';
import { startLocalGateway, type LocalGateway, type LocalGatewayOptions } from '../../infra/local/server';

/**
 * Boot the local runtime in this test process: in-memory, random port, own tables, each
 * endpoint group's code imported with its first request. The run
 * reconciler makes its start-up pass only, unless a test sets `reconcileIntervalMs`: tests
 * that drive runs by hand (setLifecycleHooks) hold runs that no execution runs.
 */
export function startTestGateway(options: LocalGatewayOptions = {}): Promise<LocalGateway> {
  return startLocalGateway({
    port: 0,
    dataDir: 'memory',
    reconcileIntervalMs: 3_600_000,
    dynamodbEndpoint: inject('dynamodbEndpoint'),
    tablePrefix: process.env.GATEWAY_TEST_TABLE_PREFIX,
    trustedHosts: ['127.0.0.1', 'localhost'],
    loadHandlers: 'on-first-use',
    ...options,
  });
}

export interface CallOptions {
  key?: string | null;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface CallResult<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

/** One HTTP call to the gateway; JSON bodies are encoded and decoded. */
export async function call<T = any>(gw: LocalGateway, method: string, path: string, opts: CallOptions = {}): Promise<CallResult<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  const key = opts.key === undefined ? gw.adminKey : opts.key;
  if (key !== null) headers['x-gateway-api-key'] = key;
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(gw.url + path, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON */
  }
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}

/** Assert the one error shape and return the error object. */
export function errorOf(result: CallResult): { message: string; type: string; param: string | null; code: string | null } {
  const err = (result.body as { error?: unknown })?.error as { message: string; type: string; param: string | null; code: string | null };
  if (!err || typeof err.message !== 'string' || typeof err.type !== 'string' || !('param' in err) || !('code' in err)) {
    throw new Error(`not an error body: ${result.text}`);
  }
  return err;
}

/** Request-log records are written after the response: poll the logs API until `count` arrive (5 s at most). */
export async function logsOf(gw: LocalGateway, query: string, count = 1): Promise<CallResult> {
  let logs = await call(gw, 'GET', `/v1/logs?${query}`);
  for (let i = 0; i < 50 && (logs.body?.data?.length ?? 0) < count; i++) {
    await new Promise((r) => setTimeout(r, 100));
    logs = await call(gw, 'GET', `/v1/logs?${query}`);
  }
  return logs;
}

/** Every request-log record of one `_user`, all pages, polled until `count` are written (10 s at most). */
export async function recordsOfUser(gw: LocalGateway, user: string, count: number): Promise<any[]> {
  const all: any[] = [];
  for (let i = 0; i < 100; i++) {
    all.length = 0;
    let after: string | undefined;
    do {
      const page = await call(gw, 'GET', `/v1/logs?metadata._user=${user}&limit=100${after ? `&after=${after}` : ''}`);
      all.push(...page.body.data);
      after = page.body.has_more ? page.body.last_id : undefined;
    } while (after);
    if (all.length >= count) return all;
    await new Promise((r) => setTimeout(r, 100));
  }
  return all;
}

/** Admin-API calls the benchmarks make to set a gateway up (keys, providers, configs, policies). */
export async function api<T = Record<string, unknown>>(baseUrl: string, key: string, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(baseUrl + path, {
    method,
    headers: { 'x-gateway-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path} -> ${res.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text) as T;
}

export interface BenchSetup {
  /** A `gateway`-scoped key no policy applies to. */
  key: string;
  /** A `gateway`-scoped key under one requests-per-minute policy (limit too high to refuse). */
  limitedKey: string;
  limitedKeyId: string;
  policyId: string;
  /**
   * With every feature of the chat hot path on (`gateway-chat-full`): a key under a
   * requests/min policy and a budget (neither refuses), a price override, and per upstream
   * latency a saved config whose target is a managed provider at the fake. Only when
   * `setUpGateway` is given the upstreams.
   */
  full?: Record<0 | 50, FullChat>;
}

/**
 * Keys and a never-refusing rate-limit policy (conditions: api_key = the limited key); with
 * the fake upstreams, also the setup of `gateway-chat-full` (see `BenchSetup.full`).
 */
export async function setUpGateway(url: string, adminKey: string, upstreams?: { openai0: string; openai50: string }): Promise<BenchSetup> {
  const plain = await api<{ id: string; secret: string }>(url, adminKey, 'POST', '/v1/api-keys', { name: 'bench', scopes: ['gateway'] });
  const limited = await api<{ id: string; secret: string }>(url, adminKey, 'POST', '/v1/api-keys', { name: 'bench-limited', scopes: ['gateway'] });
  const policy = await api<{ id: string }>(url, adminKey, 'POST', '/v1/policies/rate-limits', {
    name: 'bench: never refuses',
    conditions: [{ key: 'api_key', value: limited.id }],
    group_by: [],
    type: 'requests',
    unit: 'rpm',
    value: 1_000_000_000_000,
  });
  const setup: BenchSetup = { key: plain.secret, limitedKey: limited.secret, limitedKeyId: limited.id, policyId: policy.id };
  if (upstreams) {
    // A price override too: a workspace price is looked up before the catalogue's.
    await api(url, adminKey, 'POST', '/v1/prices', { provider: 'openai', model: 'gpt-4o-mini', input_per_mtok: 0.15, output_per_mtok: 0.6 });
    setup.full = {
      0: await setUpFullChat(url, adminKey, 'bench-full-0', upstreams.openai0),
      50: await setUpFullChat(url, adminKey, 'bench-full-50', upstreams.openai50),
    };
  }
  return setup;
}

/**
 * What the storage and cost phases send a chat request through: a key under a requests/min
 * policy that never refuses (so the limiter does its work), a managed OpenAI provider at the
 * fake upstream, and a saved config targeting it. Returns the key.
 */
export async function setUpLimitedChat(
  admin: (method: string, path: string, body?: unknown) => Promise<unknown>,
  name: string,
  upstreamUrl: string,
  providerKey: string,
): Promise<{ id: string; secret: string }> {
  const key = (await admin('POST', '/v1/api-keys', { name, scopes: ['gateway'] })) as { id: string; secret: string };
  await admin('POST', '/v1/policies/rate-limits', {
    name: `${name}: never refuses`,
    conditions: [{ key: 'api_key', value: key.id }],
    type: 'requests',
    unit: 'rpm',
    value: 1_000_000_000_000,
  });
  await admin('POST', '/v1/providers', { slug: `${name}-openai`, provider: 'openai', api_key: providerKey, custom_host: `${upstreamUrl}/v1` });
  await admin('POST', '/v1/configs', { name, slug: `${name}-config`, config: { retry: { attempts: 1 }, targets: [{ provider: `@${name}-openai` }] } });
  return key;
}

/** A chat request's headers with every feature of issue 38 on (see `setUpFullChat`). */
export interface FullChat {
  keyId: string;
  headers: Record<string, string>;
}

/**
 * Chat with every feature on (issue 38): a gateway key under a requests/min policy and a
 * monthly budget (and, with `tokens`, a tokens/min policy), none of which ever refuses; a
 * managed OpenAI provider at the fake upstream (its key encrypted, so a KMS data key); a
 * saved config targeting it; pricing (gpt-4o-mini is in the price catalogue) and the
 * request log, as always. Returns the headers a request sends (the body names the model).
 */
export async function setUpFullChat(url: string, adminKey: string, name: string, upstreamUrl: string, opts: { tokens?: boolean } = {}): Promise<FullChat> {
  const admin = (method: string, path: string, body?: unknown) => api(url, adminKey, method, path, body);
  const key = await setUpLimitedChat(admin, name, upstreamUrl, 'sk-bench-provider-key-0123456789');
  const onKey = [{ key: 'api_key', value: key.id }];
  await admin('POST', '/v1/policies/budgets', { type: 'budget', name: `${name}: never spent`, limit_usd: 1_000_000_000, period: 'month', conditions: onKey });
  if (opts.tokens) {
    await admin('POST', '/v1/policies/rate-limits', { name: `${name}: tokens`, conditions: onKey, type: 'tokens', unit: 'rpm', value: 1_000_000_000_000 });
  }
  return { keyId: key.id, headers: { 'content-type': 'application/json', 'x-gateway-api-key': key.secret, 'x-gateway-config': `${name}-config` } };
}

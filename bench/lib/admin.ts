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
}

/** Keys and a never-refusing rate-limit policy (conditions: api_key = the limited key). */
export async function setUpGateway(url: string, adminKey: string): Promise<BenchSetup> {
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
  return { key: plain.secret, limitedKey: limited.secret, limitedKeyId: limited.id, policyId: policy.id };
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

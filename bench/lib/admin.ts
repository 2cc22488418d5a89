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

/**
 * The I/O of the fine-tuning adapters: resolve the managed provider to an endpoint, send
 * through the gateway's one outbound client (SSRF guard, timeouts), and sort failures into
 * the two kinds the workflow treats differently:
 * - ProviderUnavailable (network, timeout, 408, 429, 5xx): transient, retried by the state
 *   machine with backoff, then the job fails;
 * - ProviderRejected (any other non-2xx, bad settings): permanent, fails the job at once
 *   with the provider's message.
 */
import { resolveLeaf } from '../../gateway/target';
import { GatewayError } from '../../shared/errors';
import { readBody, sendUpstream } from '../../shared/net/http-client';
import type { UpstreamRequest } from '../../providers/types';
import { PROVIDER_UNAVAILABLE } from '../workflow';
import { fineTuningAdapter } from './index';
import { obj, str } from './shape';
import type { Endpoint, FineTuningAdapter } from './types';

const TIMEOUT_MS = 30_000;
const MAX_RESPONSE_BYTES = 10 * 1024 * 1024;

export class ProviderUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = PROVIDER_UNAVAILABLE;
  }
}

export class ProviderRejected extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string,
    readonly param: string,
  ) {
    super(message);
    this.name = 'ProviderRejected';
  }
}

export interface ProviderConnection {
  adapter: FineTuningAdapter;
  endpoint: Endpoint;
}

/**
 * The managed provider `slug` of a workspace as a fine-tuning endpoint. Throws
 * ProviderRejected when it no longer exists, has no fine-tuning adapter or lacks settings.
 */
export async function connect(workspaceId: string, slug: string): Promise<ProviderConnection> {
  try {
    const { adapter: data, target } = await resolveLeaf({ provider: `@${slug}` }, workspaceId);
    const adapter = fineTuningAdapter(target.provider);
    if (!adapter) throw new ProviderRejected(`Provider '${target.provider}' has no fine-tuning API in the gateway.`, 400, 'unsupported_provider', '');
    return { adapter, endpoint: { base: data.baseUrl(target), auth: data.authHeaders(target), target } };
  } catch (err) {
    if (err instanceof GatewayError) throw new ProviderRejected(err.message, err.status, err.code ?? 'provider_not_found', err.param ?? '');
    throw err;
  }
}

export interface ProviderResponse {
  status: number;
  body: unknown;
}

/** The provider's own error text from any of the usual shapes. */
export function providerError(body: unknown): { message?: string; code?: string; param?: string } {
  const root = obj(body);
  const e = typeof root.error === 'object' && root.error !== null ? obj(root.error) : root;
  const message = str(e.message) ?? (typeof root.error === 'string' ? root.error : undefined) ?? str(root.detail);
  const code = str(e.code) ?? (typeof e.code === 'number' ? String(e.code) : undefined) ?? str(e.type);
  return { message, code, param: str(e.param) };
}

/** One request; 2xx and permanent errors come back, transient ones throw ProviderUnavailable. */
export async function send(name: string, req: UpstreamRequest): Promise<ProviderResponse> {
  let status: number;
  let raw: Buffer;
  try {
    const res = await sendUpstream({ ...req, timeoutMs: TIMEOUT_MS });
    status = res.status;
    raw = await readBody(res.body, MAX_RESPONSE_BYTES);
  } catch (err) {
    if (err instanceof GatewayError && err.status < 500 && err.status !== 408) {
      // A blocked or malformed host: retrying cannot help.
      throw new ProviderRejected(err.message, err.status, err.code ?? 'invalid_provider_host', '');
    }
    throw new ProviderUnavailable(`${name} could not be reached: ${(err as Error).message}`);
  }
  let body: unknown;
  if (raw.length) {
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      body = raw.toString('utf8').slice(0, 500);
    }
  }
  if (status === 408 || status === 429 || status >= 500) {
    const detail = providerError(body).message;
    throw new ProviderUnavailable(`${name} answered HTTP ${status}${detail ? `: ${detail}` : ''}`);
  }
  return { status, body };
}

/** A non-2xx answer as the permanent error it is, in the provider's own words. */
export function rejection(name: string, res: ProviderResponse): ProviderRejected {
  const e = providerError(res.body);
  return new ProviderRejected(
    `${name} refused the request (HTTP ${res.status})${e.message ? `: ${e.message}` : ''}`,
    res.status,
    e.code ?? `provider_http_${res.status}`,
    e.param ?? '',
  );
}

/** A request that must succeed: non-2xx becomes ProviderRejected with the provider's words. */
export async function sendOk(name: string, req: UpstreamRequest): Promise<unknown> {
  const res = await send(name, req);
  if (res.status >= 200 && res.status < 300) return res.body;
  throw rejection(name, res);
}

import { createHash } from 'node:crypto';
import { PassThrough, Readable } from 'node:stream';
import { getItem, putItem } from '../shared/db/ops';
import type { ConfigNode } from '../shared/gateway-config';
import { afterResponse, type RequestContext } from '../shared/telemetry/context';
import { log } from '../shared/telemetry/logger';
import type { UpstreamRequest } from '../providers/types';
import type { GatewayOptions } from './headers';
import type { UpstreamOutcome } from './routing';

export type CacheStatus = 'HIT' | 'MISS' | 'REFRESH' | 'DISABLED';

const DEFAULT_MAX_AGE_S = 7 * 24 * 3600;
const MIN_MAX_AGE_S = 60;
const MAX_MAX_AGE_S = 90 * 24 * 3600;
/** DynamoDB items stop at 400 KB; bigger bodies are simply not cached. */
export const MAX_CACHED_BYTES = 350 * 1024;
const KEPT_HEADERS = ['content-type'];

export interface CachePlan {
  key: string;
  maxAgeSeconds: number;
  refresh: boolean;
}

/** `cache-control: max-age=N` from the caller, if any. */
function maxAgeFromHeader(headers: Record<string, string>): number | undefined {
  const match = /(?:^|,)\s*max-age=(\d+)/i.exec(headers['cache-control'] ?? '');
  return match ? Number(match[1]) : undefined;
}

/**
 * Whether and how to cache this attempt (simple mode). The key covers the workspace, the
 * namespace (or else provider, route and URL) and the exact provider-bound body, so a
 * namespace partitions the cache without mixing different requests.
 */
export function planCache(
  node: ConfigNode,
  options: GatewayOptions,
  headers: Record<string, string>,
  workspaceId: string,
  route: string,
  provider: string,
  upstream: UpstreamRequest,
): CachePlan | undefined {
  if (node.cache?.mode !== 'simple') return undefined;
  const requested = maxAgeFromHeader(headers) ?? node.cache.max_age ?? DEFAULT_MAX_AGE_S;
  const maxAgeSeconds = Math.min(MAX_MAX_AGE_S, Math.max(MIN_MAX_AGE_S, requested));
  const partition = options.cacheNamespace !== undefined ? `ns\u0000${options.cacheNamespace}` : `p\u0000${provider}\u0000${route}\u0000${upstream.url}`;
  const key = createHash('sha256')
    .update(workspaceId)
    .update('\u0000')
    .update(partition)
    .update('\u0000')
    .update(upstream.body ?? '')
    .digest('hex');
  return { key, maxAgeSeconds, refresh: options.cacheForceRefresh };
}

interface CacheItem {
  pk: string;
  sk: string;
  status: number;
  headers: Record<string, string>;
  body: Uint8Array;
  ttl: number;
}

const cacheKey = (key: string) => ({ pk: `CACHE#${key}`, sk: 'response' });

/** A cached provider response, replayed as if it had just arrived. */
export async function readCache(plan: CachePlan): Promise<UpstreamOutcome | undefined> {
  const item = await getItem<CacheItem>('cache', cacheKey(plan.key));
  // TTL deletion is lazy: an expired item can still be read, so check it here.
  if (!item || item.ttl <= Math.floor(Date.now() / 1000)) return undefined;
  return { status: item.status, headers: item.headers, body: Readable.from([Buffer.from(item.body)]) };
}

/** Store a successful provider body after the response (bodies over the item limit are not cached). */
function store(plan: CachePlan, response: UpstreamOutcome, body: Buffer, ctx: RequestContext): void {
  const headers: Record<string, string> = {};
  for (const name of KEPT_HEADERS) {
    const value = response.headers[name];
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  afterResponse(ctx, async () => {
    await putItem('cache', {
      ...cacheKey(plan.key),
      status: response.status,
      headers,
      body,
      ttl: Math.floor(Date.now() / 1000) + plan.maxAgeSeconds,
    }).catch((err: unknown) => log.warn('cache write failed', { error: (err as Error).message }, ctx));
  });
}

/** Cache a successful body the attempt already read. */
export function storeBuffered(plan: CachePlan, response: UpstreamOutcome, body: Buffer, ctx: RequestContext): void {
  if (body.length <= MAX_CACHED_BYTES) store(plan, response, body, ctx);
}

/**
 * Pass a successful provider body through while keeping a copy; once it has ended cleanly
 * the copy is stored (after the response). Bodies over the item limit are not cached.
 */
export function storeWhileStreaming(plan: CachePlan, response: UpstreamOutcome, ctx: RequestContext): UpstreamOutcome {
  const chunks: Buffer[] = [];
  let size = 0;
  let tooBig = false;
  const tee = new PassThrough();
  response.body.on('data', (chunk: Buffer) => {
    if (!tooBig) {
      size += chunk.length;
      if (size > MAX_CACHED_BYTES) {
        tooBig = true;
        chunks.length = 0;
      } else chunks.push(chunk);
    }
  });
  response.body.once('end', () => {
    if (!tooBig) store(plan, response, Buffer.concat(chunks), ctx);
  });
  response.body.pipe(tee);
  // Destroying the copy (caller left) must still abort the provider request.
  tee.on('close', () => {
    if (!response.body.readableEnded) response.body.destroy();
  });
  return { ...response, body: tee };
}

/**
 * Which mode a batch runs in (`x-gateway-batch-mode: native | gateway`, default `gateway`),
 * and, in native mode, the one provider it runs on: the create request's routing resolved as
 * any request's is (a managed provider, a virtual key, a config), which must come to exactly
 * one provider that has a native batch adapter for the batch's endpoint.
 */
import { resolveConfig, resolveLeaf } from '../../gateway/target';
import { badRequest } from '../../shared/errors';
import type { CallerRequest } from '../../shared/http/types';
import { newRequestContext } from '../../shared/telemetry/context';
import { BATCH_MODES, type BatchEndpoint, type BatchMode, type BatchRecord, type NativeBatchState } from '../types';
import { nativeBatchAdapter, nativeBatchProviders } from './registry';
import type { NativeBatchAdapter, NativeProvider } from './types';

export const BATCH_MODE_HEADER = 'x-gateway-batch-mode';

/** The mode the create request asks for; a 400 naming the header for anything else. */
export function batchModeOf(headers: Record<string, string>): BatchMode {
  const raw = headers[BATCH_MODE_HEADER]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return 'gateway';
  if ((BATCH_MODES as readonly string[]).includes(raw)) return raw as BatchMode;
  throw badRequest(`${BATCH_MODE_HEADER} must be one of ${BATCH_MODES.join(', ')}, not '${raw.slice(0, 32)}'.`, BATCH_MODE_HEADER, 'invalid_value');
}

export interface NativeTarget {
  adapter: NativeBatchAdapter;
  provider: NativeProvider;
  /** The leaf's `override_params` (a config's model mapping): applied to every line as the live path applies them. */
  overrideParams?: Record<string, unknown>;
}

/**
 * The provider and native adapter of a batch, from its routing headers. A 400 when the routing
 * can reach more than one provider (fallbacks, load balancing, conditions) or the provider has
 * no native batch API for `endpoint`.
 */
export async function resolveNativeTarget(req: CallerRequest, endpoint: BatchEndpoint): Promise<NativeTarget> {
  const resolved = await resolveConfig(req);
  if (resolved.config.targets?.length) {
    const param = req.headers['x-gateway-config'] ? 'x-gateway-config' : 'default_config';
    throw badRequest(
      `Native batch mode hands the whole batch to one provider's batch API, so the routing must name exactly one provider; this config has \`targets\` (fallback, load balancing or conditional routing). Use a config without \`targets\`, name one provider with x-gateway-provider, or run the batch in gateway mode.`,
      param,
      'native_batch_needs_one_provider',
    );
  }
  const leaf = resolved.config;
  const { adapter: data, target, managedProvider } = await resolveLeaf(leaf, req.auth.workspaceId);
  const adapter = nativeBatchAdapter(data.slug, endpoint);
  if (!adapter) {
    const other = nativeBatchAdapter(data.slug);
    const why = other
      ? `its batch API does not take ${endpoint} (it takes ${other.endpoints.join(', ')})`
      : `it has no batch API in the gateway (native batches run on: ${nativeBatchProviders().join(', ') || 'none'})`;
    throw badRequest(
      `Provider '${data.slug}' cannot run this batch natively: ${why}. Run it in gateway mode instead.`,
      BATCH_MODE_HEADER,
      'native_batch_unsupported',
    );
  }
  return { adapter, provider: { adapter: data, target, managedProvider }, overrideParams: leaf.override_params };
}

/** The native target of a stored batch, resolved afresh (credentials are never stored with it). */
export function nativeTargetOf(batch: BatchRecord): Promise<NativeTarget> {
  const caller: CallerRequest = {
    method: 'POST',
    path: '/v1/batches',
    headers: batch.headers,
    traceId: batch.id,
    context: newRequestContext(batch.id),
    auth: batch.auth,
    receivedAt: Date.now(),
  };
  return resolveNativeTarget(caller, batch.endpoint);
}

export const initialNativeState = (provider: string): NativeBatchState => ({
  provider,
  job: null,
  provider_status: null,
  provider_counts: null,
  rejected: 0,
  stop_requested_at: null,
  polled_at: null,
  polls: 0,
});

/**
 * Asks the provider to stop a cancelled native batch's job at once (the batch's next poll
 * sees it stop). False when it could not (no job yet, the provider unreachable): the next
 * step asks again.
 */
export async function stopNativeJob(batch: BatchRecord): Promise<boolean> {
  const job = batch.native?.job;
  if (!job) return false;
  const target = await nativeTargetOf(batch);
  const ctx = { workspaceId: batch.workspace_id, batchId: batch.id, endpoint: batch.endpoint, provider: target.provider, signal: new AbortController().signal };
  await target.adapter.cancel(ctx, job);
  return true;
}

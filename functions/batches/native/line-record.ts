/**
 * A native batch's answered line: the line of the output or error file it becomes (OpenAI's
 * batch output format), and its request-log record, priced at the provider's batch discount,
 * so spend reports and counters see native lines as they see live requests.
 */
import { recordRequest } from '../../gateway/request-log';
import { ID_PREFIX, newId } from '../../shared/ids';
import type { CallerRequest } from '../../shared/http/types';
import { flushAfterResponse, newRequestContext } from '../../shared/telemetry/context';
import { log } from '../../shared/telemetry/logger';
import { priceRequest, toNanoUsd } from '../../spend/pricing';
import type { RequestCost, RequestFacts } from '../../spend/request-record';
import { errorResult } from '../answer';
import { MAX_ANSWER_BYTES } from '../line-call';
import type { BatchEndpoint, BatchRecord, LineResult } from '../types';
import type { NativeTarget } from './mode';
import type { NativeLineResult } from './types';

/** The request-log route of each batch endpoint (as its live route names itself). */
const ROUTE_OF: Record<BatchEndpoint, string> = {
  '/v1/chat/completions': 'chat.completions',
  '/v1/embeddings': 'embeddings',
  '/v1/responses': 'responses',
  '/v1/messages': 'messages',
  '/v1/completions': 'completions',
};

/** A native line as the file holds it; `traceId` is its request-log record's (the `request_id` when the provider gives none). */
export function lineResultOf(result: NativeLineResult, customId: string | null, traceId: string): LineResult {
  const id = result.id ?? newId('batch_req_');
  if (!result.response) {
    const error = result.error ?? { code: 'no_response', message: `The provider returned no answer for line ${result.line}.` };
    return { line: result.line, custom_id: customId, ok: false, text: JSON.stringify({ id, custom_id: customId, response: null, error }) };
  }
  const { status_code, request_id, body } = result.response;
  const text = JSON.stringify({ id, custom_id: customId, response: { status_code, request_id: request_id ?? traceId, body }, error: null });
  if (Buffer.byteLength(text) > MAX_ANSWER_BYTES) {
    return errorResult(
      result.line,
      customId,
      'response_too_large',
      `The answer to line ${result.line} exceeds the ${MAX_ANSWER_BYTES} bytes a batch keeps per line.`,
    );
  }
  return { line: result.line, custom_id: customId, ok: status_code >= 200 && status_code < 300, text };
}

/** The batch creator's metadata (x-gateway-metadata) with the batch's own keys. */
function lineMetadata(batch: BatchRecord, customId: string | null): Record<string, string> {
  let metadata: Record<string, string> = {};
  try {
    const parsed = JSON.parse(batch.headers['x-gateway-metadata'] ?? '{}') as unknown;
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) metadata = parsed as Record<string, string>;
  } catch {
    // Checked when the batch was created.
  }
  return { ...metadata, batch_id: batch.id, batch_mode: 'native', ...(customId ? { batch_custom_id: customId.slice(0, 256) } : {}) };
}

const modelOf = (result: NativeLineResult): string | undefined => {
  if (result.model) return result.model;
  const body = result.response?.body as { model?: unknown } | undefined;
  return typeof body?.model === 'string' ? body.model : undefined;
};

/** The line's cost: the provider's list price for its usage, less the batch discount. */
async function discountedCost(batch: BatchRecord, target: NativeTarget, result: NativeLineResult, model: string | undefined): Promise<RequestCost> {
  const status = result.response?.status_code ?? 0;
  const listed = await priceRequest({
    workspaceId: batch.workspace_id,
    provider: target.provider.adapter.slug,
    model,
    usage: result.usage,
    cacheHit: false,
    succeeded: status >= 200 && status < 400,
  });
  if (listed.cost_usd === null || listed.cost_usd === 0) return listed;
  return { ...listed, cost_usd: toNanoUsd(listed.cost_usd * (1 - target.adapter.batchDiscount)) / 1e9 };
}

/**
 * The request-log record of a line the provider answered (a line it never ran has none: it
 * cost nothing). Written once the line is recorded, so a line recorded once is logged once.
 */
export async function logNativeLine(
  batch: BatchRecord,
  target: NativeTarget,
  result: NativeLineResult,
  customId: string | null,
  traceId: string,
): Promise<void> {
  if (!result.response) return;
  const context = newRequestContext(traceId);
  context.logId = traceId;
  context.workspaceId = batch.workspace_id;
  context.route = `batch ${batch.endpoint}`;
  const req: CallerRequest = { method: 'POST', path: batch.endpoint, headers: batch.headers, traceId, context, auth: batch.auth, receivedAt: Date.now() };
  const model = modelOf(result);
  const facts: RequestFacts = {
    route: ROUTE_OF[batch.endpoint],
    provider: target.provider.adapter.slug,
    managedProvider: target.provider.managedProvider,
    model,
    status: result.response.status_code,
    stream: false,
    usage: result.usage,
    retries: 0,
    attempts: [],
    metadata: lineMetadata(batch, customId),
    cost: await discountedCost(batch, target, result, model),
    extra: { batch_discount: target.adapter.batchDiscount, ...(result.response.request_id ? { provider_request_id: result.response.request_id } : {}) },
  };
  recordRequest(req, facts);
  await flushAfterResponse(context, (err) => log.error('native batch line log failed', { batch_id: batch.id, line: result.line, error: String(err) }, context));
}

export const newLineTraceId = () => newId(ID_PREFIX.log);

import { chatCall, type ChatFailure, type ChatOutcome, type ChatStream } from '../../gateway/chat-core';
import { ChatStreamError } from '../../gateway/chat-stream';
import { openRequestLog } from '../../gateway/request-log';
import type { ChatCompletionChunk, ChatRequest, FinishReason, Usage } from '../../providers/types';
import { GatewayError } from '../../shared/errors';
import type { CallerRequest } from '../../shared/http/types';
import type { RequestContext } from '../../shared/telemetry/context';
import { readBody } from '../../shared/net/http-client';
import { getWorkspace } from '../../shared/stores/workspaces';
import type { RunRecord } from '../store/runs';
import type { ToolCall } from '../types';

/**
 * One model call of a run through the gateway's chat core (chatCall), so routing,
 * limits, guardrails and request logs apply as to any caller. The caller is the engine:
 * the run's workspace and organisation, the engine's own key id, the run's managed
 * provider (`x-gateway-provider: @slug`; never a raw key) and the run id as trace id.
 * The call is always streamed; chunks are handed to the caller as they arrive.
 */

export const ENGINE_KEY_ID = 'assistants-engine';
const MAX_ERROR_BODY = 64 * 1024;

export interface ToolCallDelta {
  index: number;
  id?: string;
  name?: string;
  arguments?: string;
}

export interface ModelCallHandlers {
  text(delta: string): Promise<void>;
  toolCall(delta: ToolCallDelta): Promise<void>;
}

export type LastErrorCode = 'server_error' | 'rate_limit_exceeded' | 'invalid_prompt';
export interface LastError {
  code: LastErrorCode;
  message: string;
}

export type ModelCallResult =
  | { kind: 'ok'; finish: FinishReason | null; usage: Usage; text: string; toolCalls: ToolCall[] }
  | { kind: 'error'; error: LastError; usage: Usage | null }
  | { kind: 'aborted'; usage: Usage | null };

/** last_error.code of a failed call, by HTTP status: 429 rate limit; a request the provider refused; otherwise the server's. */
export function lastErrorCode(status: number): LastErrorCode {
  if (status === 429) return 'rate_limit_exceeded';
  if (status >= 400 && status < 500 && ![401, 403, 408].includes(status)) return 'invalid_prompt';
  return 'server_error';
}

const organisations = new Map<string, string>();
async function organisationOf(workspaceId: string): Promise<string> {
  const known = organisations.get(workspaceId);
  if (known) return known;
  const ws = await getWorkspace(workspaceId);
  if (!ws) throw new Error(`workspace ${workspaceId} not found`);
  organisations.set(workspaceId, ws.organisation_id);
  return ws.organisation_id;
}

export async function engineRequest(context: RequestContext, record: RunRecord): Promise<CallerRequest> {
  return {
    method: 'POST',
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json', 'x-gateway-provider': `@${record.provider}` },
    // The run's id, so its calls' request logs are found under it (GET /v1/logs?trace_id=).
    traceId: record.run.id,
    context,
    auth: {
      keyId: ENGINE_KEY_ID,
      workspaceId: record.workspaceId,
      organisationId: await organisationOf(record.workspaceId),
      role: 'member',
      scopes: ['gateway'],
    },
    receivedAt: Date.now(),
  };
}

function errorMessage(text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    const e = parsed.error;
    const message = typeof e === 'object' && e ? e.message : typeof e === 'string' ? e : parsed.message;
    if (typeof message === 'string' && message) return message;
  } catch {
    /* not JSON */
  }
  return text.slice(0, 500) || 'The provider returned an error without a message.';
}

/** The provider's or gateway's refusal as a run's last_error. */
async function failure(outcome: ChatFailure): Promise<ModelCallResult> {
  const text = outcome.error
    ? JSON.stringify(outcome.error.toBody())
    : (await readBody(outcome.upstream!.body, MAX_ERROR_BODY).catch(() => Buffer.alloc(0))).toString('utf8');
  return { kind: 'error', error: { code: lastErrorCode(outcome.status), message: errorMessage(text) }, usage: null };
}

/** The model's answer as it streams: text and tool-call deltas handed on in order, tool calls assembled. */
class ChunkReader {
  text = '';
  finish: FinishReason | null = null;
  usage: Usage | null = null;
  private readonly calls: ToolCall[] = [];

  constructor(private readonly handlers: ModelCallHandlers) {}

  get toolCalls(): ToolCall[] {
    return this.calls.filter(Boolean);
  }

  async chunk(chunk: ChatCompletionChunk): Promise<void> {
    if (chunk.usage) this.usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) return;
    if (choice.finish_reason) this.finish = choice.finish_reason;
    const content = choice.delta?.content;
    if (content) {
      this.text += content;
      await this.handlers.text(content);
    }
    for (const tc of choice.delta?.tool_calls ?? []) {
      const call = (this.calls[tc.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
      if (tc.id) call.id = tc.id;
      if (tc.function?.name) call.function.name += tc.function.name;
      if (tc.function?.arguments) call.function.arguments += tc.function.arguments;
      await this.handlers.toolCall({ index: tc.index, id: tc.id, name: tc.function?.name, arguments: tc.function?.arguments });
    }
  }
}

/** A stream that ended without its answer, as a run's last_error. */
function streamFailure(err: ChatStreamError): LastError {
  const rate = err.type === 'rate_limit_error' || err.code === 'rate_limit_exceeded';
  return { code: rate ? 'rate_limit_exceeded' : 'server_error', message: err.message || 'The provider stream failed.' };
}

/** Read the stream until it ends, fails, or the run is cancelled; returns the failure, if any. */
async function consume(stream: ChatStream, reader: ChunkReader, abort: AbortSignal | undefined): Promise<LastError | undefined> {
  const stop = () => stream.cancel();
  abort?.addEventListener('abort', stop, { once: true });
  if (abort?.aborted) stop();
  try {
    for await (const chunk of stream) {
      await reader.chunk(chunk);
      if (abort?.aborted) break;
    }
  } catch (err) {
    if (abort?.aborted) return undefined;
    if (err instanceof ChatStreamError) return streamFailure(err);
    throw err;
  } finally {
    abort?.removeEventListener('abort', stop);
  }
  return undefined;
}

/** Call the model for a run; never throws for provider or gateway refusals (they are results). */
export async function callModel(
  context: RequestContext,
  record: RunRecord,
  chat: ChatRequest,
  handlers: ModelCallHandlers,
  abort?: AbortSignal,
): Promise<ModelCallResult> {
  const req = await engineRequest(context, record);
  const log = openRequestLog(req, 'assistants.runs');
  log.extra = { run_id: record.run.id, thread_id: record.run.thread_id, assistant_id: record.run.assistant_id };
  let outcome: ChatOutcome;
  try {
    outcome = await chatCall({ req, body: chat, log });
  } catch (err) {
    log.status = (err as { status?: number }).status ?? 500;
    if (err instanceof GatewayError) return { kind: 'error', error: { code: lastErrorCode(err.status), message: err.message }, usage: null };
    throw err;
  }
  log.status = outcome.status;
  if (outcome.kind === 'failure') return failure(outcome);
  if (outcome.kind !== 'stream') throw new Error('The engine asks for a streamed answer.');
  const reader = new ChunkReader(handlers);
  const error = await consume(outcome.stream, reader, abort);
  const seen = reader.usage ?? log.usage;
  const usage: Usage | null = seen ? { prompt_tokens: seen.prompt_tokens, completion_tokens: seen.completion_tokens, total_tokens: seen.total_tokens } : null;
  if (abort?.aborted) return { kind: 'aborted', usage };
  if (error) return { kind: 'error', error, usage };
  const fallback: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  return { kind: 'ok', finish: reader.finish, usage: usage ?? fallback, text: reader.text, toolCalls: reader.toolCalls };
}

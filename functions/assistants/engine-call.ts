import type { Readable } from 'node:stream';
import { createParser } from 'eventsource-parser';
import { runChat } from '../gateway/chat';
import { withRequestLog, type RequestFacts } from '../gateway/request-log';
import type { ChatCompletionChunk, ChatRequest, FinishReason, Usage } from '../providers/types';
import { GatewayError } from '../shared/errors';
import type { GatewayRequest, HttpResponse } from '../shared/http/types';
import type { RequestContext } from '../shared/telemetry/context';
import { readBody } from '../shared/net/http-client';
import { getWorkspace } from '../shared/stores/workspaces';
import type { RunRecord } from './runs-store';
import type { ToolCall } from './types';

/**
 * One model call of a run through the gateway's unified chat path (runChat), so routing,
 * limits, guardrails and request logs apply as to any caller. The request is synthetic:
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

export async function engineRequest(context: RequestContext, record: RunRecord, chat: ChatRequest): Promise<GatewayRequest> {
  return {
    method: 'POST',
    path: '/v1/chat/completions',
    params: {},
    query: {},
    rawQuery: '',
    headers: { 'content-type': 'application/json', 'x-gateway-provider': `@${record.provider}` },
    body: Buffer.from(JSON.stringify(chat)),
    json: () => chat,
    // The run's id, so its calls' request logs are found under it (GET /v1/logs?trace_id=).
    traceId: record.run.id,
    context,
    auth: { keyId: ENGINE_KEY_ID, workspaceId: record.workspaceId, organisationId: await organisationOf(record.workspaceId), scopes: ['gateway'] },
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

async function failure(res: HttpResponse): Promise<ModelCallResult> {
  const body = res.body;
  const text = body === undefined ? '' : typeof body === 'string' ? body : Buffer.isBuffer(body) ? body.toString('utf8') : (await readBody(body as Readable, MAX_ERROR_BODY).catch(() => Buffer.alloc(0))).toString('utf8');
  return { kind: 'error', error: { code: lastErrorCode(res.statusCode), message: errorMessage(text) }, usage: null };
}

/** Reads the gateway's OpenAI chunk stream, calling the handlers in order. */
class ChunkReader {
  text = '';
  finish: FinishReason | null = null;
  usage: Usage | null = null;
  done = false;
  error: LastError | undefined;
  private readonly calls: ToolCall[] = [];

  constructor(private readonly handlers: ModelCallHandlers) {}

  get toolCalls(): ToolCall[] {
    return this.calls.filter(Boolean);
  }

  async data(data: string): Promise<void> {
    if (data === '[DONE]') {
      this.done = true;
      return;
    }
    let parsed: ChatCompletionChunk & { error?: { message?: string; type?: string; code?: string | null } };
    try {
      parsed = JSON.parse(data);
    } catch {
      return;
    }
    if (parsed.error) {
      const rate = parsed.error.type === 'rate_limit_error' || parsed.error.code === 'rate_limit_exceeded';
      this.error = { code: rate ? 'rate_limit_exceeded' : 'server_error', message: parsed.error.message ?? 'The provider stream failed.' };
      return;
    }
    if (parsed.usage) this.usage = parsed.usage;
    const choice = parsed.choices?.[0];
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

async function consume(body: Readable, reader: ChunkReader, abort: AbortSignal | undefined): Promise<void> {
  const decoder = new TextDecoder();
  const queue: string[] = [];
  const parser = createParser({ onEvent: (e) => queue.push(e.data) });
  const stop = () => body.destroy();
  abort?.addEventListener('abort', stop, { once: true });
  if (abort?.aborted) stop();
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      parser.feed(decoder.decode(chunk, { stream: true }));
      while (queue.length && !reader.error && !abort?.aborted) await reader.data(queue.shift()!);
      if (reader.error || abort?.aborted) break;
    }
  } catch (err) {
    if (!abort?.aborted) throw err;
  } finally {
    abort?.removeEventListener('abort', stop);
    if (!body.destroyed) body.destroy();
  }
}

/** Call the model for a run; never throws for provider or gateway refusals (they are results). */
export async function callModel(
  context: RequestContext,
  record: RunRecord,
  chat: ChatRequest,
  handlers: ModelCallHandlers,
  abort?: AbortSignal,
): Promise<ModelCallResult> {
  const req = await engineRequest(context, record, chat);
  let facts: RequestFacts | undefined;
  let res: HttpResponse;
  try {
    res = await withRequestLog(req, 'assistants.runs', (f) => {
      facts = f;
      f.extra = { run_id: record.run.id, thread_id: record.run.thread_id, assistant_id: record.run.assistant_id };
      return runChat(req, chat, f);
    });
  } catch (err) {
    if (err instanceof GatewayError) return { kind: 'error', error: { code: lastErrorCode(err.status), message: err.message }, usage: null };
    throw err;
  }
  if (res.statusCode >= 400) return failure(res);
  const reader = new ChunkReader(handlers);
  const body = res.body;
  if (body && typeof body !== 'string' && !Buffer.isBuffer(body)) await consume(body, reader, abort);
  const seen = reader.usage ?? facts?.usage;
  const usage: Usage | null = seen ? { prompt_tokens: seen.prompt_tokens, completion_tokens: seen.completion_tokens, total_tokens: seen.total_tokens } : null;
  if (abort?.aborted) return { kind: 'aborted', usage };
  if (reader.error) return { kind: 'error', error: reader.error, usage };
  if (!reader.done && !reader.finish) {
    return { kind: 'error', error: { code: 'server_error', message: 'The provider stream ended before the answer was complete.' }, usage };
  }
  const fallback: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  return { kind: 'ok', finish: reader.finish, usage: usage ?? fallback, text: reader.text, toolCalls: reader.toolCalls };
}

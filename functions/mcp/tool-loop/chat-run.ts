/**
 * `POST /v1/chat/completions` with `x-gateway-mcp-servers: <slug>[,<slug>...]` (a gateway
 * extension): the tools of those stored MCP servers are run server-side on the shared tool
 * loop, so any OpenAI-compatible client gets them. The answer is the model's last turn as a
 * chat completion (streamed: its chunks), with the calls made listed in `mcp_calls`.
 */
import { Readable } from 'node:stream';
import { parseChatBody } from '../../gateway/chat';
import { openAIFailureResponse } from '../../gateway/responses';
import type { ChatRequest, FinishReason, Usage } from '../../providers/types';
import { asGatewayError } from '../../shared/errors';
import { newId } from '../../shared/ids';
import { json, mergeHeaders } from '../../shared/http/response';
import { SSE_HEADERS } from '../../shared/http/sse';
import type { GatewayRequest, HttpResponse } from '../../shared/http/types';
import type { StreamFailure } from '../../formats/sse';
import { COMMITTED, type LoopSink, runUntilCommitted, ToolLoop } from './engine';
import { resolveMcpTools } from './spec';

const MCP_SERVERS_HEADER = 'x-gateway-mcp-servers';

type Chunk = Record<string, unknown>;
type McpCallRecord = { server: string; name: string; arguments: string; output: string | null; error: string | null };
type ToolCallOut = { id: string; type: 'function'; function: { name: string; arguments: string } };

class ChatMcpSink implements LoopSink<Chunk> {
  readonly mcpCalls: McpCallRecord[] = [];
  text = '';
  toolCalls: ToolCallOut[] = [];
  completion: Record<string, unknown> | undefined;
  #events: Chunk[] = [];

  constructor(
    private readonly ctx: { id: string; created: number; model: string },
    private readonly streaming: boolean,
  ) {}

  drain(): Chunk[] {
    const events = this.#events;
    this.#events = [];
    return events;
  }
  listTools(): void {}
  approvalRequest(): void {}
  startCall(server: string, name: string, args: string) {
    const call: McpCallRecord = { server, name, arguments: args, output: null, error: null };
    this.mcpCalls.push(call);
    return {
      finish: (output: string | null, error: string | null) => {
        call.output = output;
        call.error = error;
      },
    };
  }
  functionCall(callId: string, name: string, args: string): void {
    const call: ToolCallOut = { id: callId, type: 'function', function: { name, arguments: args } };
    this.#chunk({ tool_calls: [{ index: this.toolCalls.length, ...call }] }, null);
    this.toolCalls.push(call);
  }
  textDelta(delta: string): void {
    if (!delta) return;
    this.text += delta;
    this.#chunk({ content: delta }, null);
  }
  refusal(text: string): void {
    this.textDelta(text);
  }
  closeText(): void {
    // Text of a turn that went on to call tools stays in the answer, as the model said it.
  }
  finish(finish: FinishReason | null, usage: Usage | undefined): void {
    const reason = this.toolCalls.length ? 'tool_calls' : finish === 'tool_calls' ? 'stop' : (finish ?? 'stop');
    this.completion = {
      id: this.ctx.id,
      object: 'chat.completion',
      created: this.ctx.created,
      model: this.ctx.model,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: this.text || null, ...(this.toolCalls.length ? { tool_calls: this.toolCalls } : {}) },
          finish_reason: reason,
          logprobs: null,
        },
      ],
      usage: usage ?? null,
      mcp_calls: this.mcpCalls,
    };
    this.#chunk({}, reason);
    if (this.streaming) this.#events.push({ ...this.#base(), choices: [], usage: usage ?? null, mcp_calls: this.mcpCalls });
  }
  fail(failure: StreamFailure): void {
    if (this.streaming)
      this.#events.push({
        error: { message: failure.message, type: failure.type ?? 'server_error', param: failure.param ?? null, code: failure.code ?? null },
      });
  }
  #base() {
    return { id: this.ctx.id, object: 'chat.completion.chunk', created: this.ctx.created, model: this.ctx.model };
  }
  #chunk(delta: Record<string, unknown>, finish: string | null): void {
    if (this.streaming) this.#events.push({ ...this.#base(), choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] });
  }
}

const frames = (chunks: Chunk[]) => chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('');

/** Under the chat route's `requestLog` middleware. */
export async function chatWithMcp(req: GatewayRequest): Promise<HttpResponse> {
  const slugs = String(req.headers[MCP_SERVERS_HEADER] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const body = parseChatBody(req);
  const tools = slugs.map((slug) => ({ type: 'mcp', server_label: slug, server: slug, require_approval: 'never' }));
  const specs = await resolveMcpTools(req.auth.workspaceId, tools, MCP_SERVERS_HEADER);
  const stream = body.stream === true;
  const sink = new ChatMcpSink({ id: newId('chatcmpl-'), created: Math.floor(Date.now() / 1000), model: body.model ?? '' }, stream);
  const loop = new ToolLoop(
    req,
    sink,
    (body.tools ?? []).map((t) => t.function.name),
    Infinity,
    'chat.completions',
  );
  await loop.offerTools(specs);
  const offered = loop.offered.map((t) => ({ type: 'function' as const, function: { name: t.name, description: t.description, parameters: t.parameters } }));
  const chat: ChatRequest = {
    ...body,
    tools: [...(body.tools ?? []), ...offered] as ChatRequest['tools'],
    ...(stream ? { stream_options: { ...body.stream_options, include_usage: true } } : {}),
  };
  const steps = loop.rounds(chat);
  const early: Chunk[] = [];
  const failure = await runUntilCommitted(steps, stream, early, (err) => openAIFailureResponse(err.outcome.dispatched));
  if (failure) return failure;
  if (!stream) return json(loop.status, sink.completion, loop.headers);
  async function* sse(): AsyncGenerator<string, void, undefined> {
    if (early.length) yield frames(early);
    try {
      for await (const step of steps) if (step !== COMMITTED && step.length) yield frames(step);
      yield 'data: [DONE]\n\n';
    } catch (err) {
      sink.fail(asGatewayError(err));
      yield frames(sink.drain());
    }
  }
  return { statusCode: loop.status, headers: mergeHeaders(SSE_HEADERS, loop.headers), body: Readable.from(sse(), { objectMode: false }) };
}

import { Readable } from 'node:stream';
import { messagesToChat } from '../../formats/messages/request';
import { newMessageId } from '../../formats/messages/response';
import { messagesRequestSchema, type MessagesRequest } from '../../formats/messages/schema';
import type { MessagesStreamEvent } from '../../formats/messages/types';
import { sseFrame } from '../../formats/sse';
import { anthropicErrors, failureResponse, providerKeyFromXApiKey } from '../../gateway/messages';
import { requestLog } from '../../gateway/request-log';
import { config } from '../../shared/config';
import { asGatewayError } from '../../shared/errors';
import { idempotency } from '../../shared/http/idempotency';
import { compose } from '../../shared/http/middleware';
import { json, mergeHeaders } from '../../shared/http/response';
import { SSE_HEADERS } from '../../shared/http/sse';
import { assertSafeUrl } from '../../shared/net/ssrf';
import { parseInput, z } from '../../shared/validation';
import { COMMITTED, runUntilCommitted, ToolLoop } from './engine';
import { MessagesMcpSink } from './messages-sink';
import { resolveMcpTools } from './spec';

const mcpServersSchema = z.array(
  z.looseObject({
    type: z.literal('url'),
    name: z.string().check(z.minLength(1)),
    url: z.optional(z.string()),
    /** Gateway extension: a server registered with /v1/mcp-servers, by slug (instead of `url`). */
    server: z.optional(z.string()),
    authorization_token: z.optional(z.nullable(z.string())),
    tool_configuration: z.optional(
      z.nullable(z.looseObject({ enabled: z.optional(z.nullable(z.boolean())), allowed_tools: z.optional(z.nullable(z.array(z.string()))) })),
    ),
  }),
);

/** Content blocks of Anthropic's connector in the history: the provider would not know them (the text around them stays). */
const MCP_BLOCKS = new Set(['mcp_tool_use', 'mcp_tool_result']);
function withoutMcpBlocks(messages: MessagesRequest['messages']): MessagesRequest['messages'] {
  return messages.map((m) => (typeof m.content === 'string' ? m : { ...m, content: m.content.filter((b) => !MCP_BLOCKS.has(b.type)) }));
}

const frames = (events: MessagesStreamEvent[]) => events.map(sseFrame).join('');

/** `/v1/messages` with `mcp_servers`, run by the gateway's tool loop on any provider (no approvals: Anthropic's connector has none). */
export const mcpMessages = compose([anthropicErrors, requestLog('messages'), idempotency], async (sent) => {
  const req = providerKeyFromXApiKey(sent);
  const raw = req.json() as { mcp_servers?: unknown };
  const body = parseInput(messagesRequestSchema, raw);
  const servers = parseInput(mcpServersSchema, raw.mcp_servers, 'mcp_servers');
  const tools = servers.map((s, i) => {
    if (s.tool_configuration?.enabled === false) return { type: 'disabled' };
    if (s.url !== undefined) assertSafeUrl(s.url, { trustedHosts: config().trustedHosts, param: `mcp_servers[${i}].url` });
    return {
      type: 'mcp',
      server_label: s.name,
      server_url: s.url,
      server: s.server,
      authorization: s.authorization_token ?? undefined,
      allowed_tools: s.tool_configuration?.allowed_tools ?? undefined,
      require_approval: 'never',
    };
  });
  const specs = await resolveMcpTools(req.auth.workspaceId, tools, 'mcp_servers');
  const stream = body.stream === true;
  const sink = new MessagesMcpSink({ id: newMessageId(), model: body.model }, stream);
  const loop = new ToolLoop(
    req,
    sink,
    (body.tools ?? []).map((t) => t.name),
    Infinity,
    'messages',
  );
  await loop.offerTools(specs);
  const offered = loop.offered.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters }));
  const chat = messagesToChat({ ...body, messages: withoutMcpBlocks(body.messages), tools: [...(body.tools ?? []), ...offered] });
  const steps = loop.rounds(chat);
  const early: MessagesStreamEvent[] = [...sink.drain()];
  const failure = await runUntilCommitted(steps, stream, early, (err) => failureResponse(err.outcome));
  if (failure) return failure;
  if (!stream) return json(loop.status, sink.message, loop.headers);
  async function* sse(): AsyncGenerator<string, void, undefined> {
    yield frames(early);
    try {
      for await (const step of steps) if (step !== COMMITTED && step.length) yield frames(step);
    } catch (err) {
      sink.fail(asGatewayError(err));
      yield frames(sink.drain());
    }
  }
  return { statusCode: loop.status, headers: mergeHeaders(SSE_HEADERS, loop.headers), body: Readable.from(sse(), { objectMode: false }) };
});

/**
 * Cohere. The generic proxy base is `https://api.cohere.com/v1`; the
 * unified routes call the v2 API on the same host (`/v2/chat`, `/v2/embed`, `/v2/rerank`).
 * With a custom host, a trailing `/v1` or `/v2` segment is removed to find that host.
 *
 * Chat best effort: a named `tool_choice` becomes REQUIRED with only that tool sent;
 * `n > 1`, `logprobs` and `logit_bias` are a 400 (_shared/unhonoured.ts); `parallel_tool_calls`,
 * `user`, `strict` on tools and message `name` are dropped. Rerank drops `return_documents` (v2 removed it;
 * documents are filled from the request instead), `rank_fields`, `truncation`, `parameters`.
 */
import { badRequest } from '../../shared/errors';
import { refuseUnhonoured } from '../_shared/unhonoured';
import { cohereFinish, cohereStream, cohereUsage, type CohereUsage } from './stream';
import { compact, completion, jsonGet, jsonPost, requireKey, resolveBase, stopList, textOf, type ToolCall } from '../_shared/openai-shape';
import { withoutCacheMarks } from '../_shared/cache-marks';
import { docText, rerankResult } from '../_shared/rerank-shape';
import type { ChatMessage, ChatRequest, ContentPart, EmbeddingsRequest, ProviderAdapter, ProviderTarget } from '../types';

const baseUrl = (t: ProviderTarget) => resolveBase(t, 'https://api.cohere.com/v1');
const v2 = (t: ProviderTarget, route: string) => `${baseUrl(t).replace(/\/v[12]$/, '')}/v2/${route}`;
const authHeaders = (t: ProviderTarget) => ({ authorization: `Bearer ${requireKey(t, 'Cohere')}` });

function userContent(content: string | ContentPart[], param: string): unknown {
  if (typeof content === 'string') return content;
  return content.map((p, i) => {
    if (p.type === 'text' || p.type === 'image_url') return p;
    throw badRequest(`Content part type '${p.type}' is not supported by Cohere.`, `${param}[${i}].type`);
  });
}

function cohereMessage(m: ChatMessage, i: number): Record<string, unknown> {
  const param = `messages[${i}]`;
  switch (m.role) {
    case 'system':
    case 'developer':
      return { role: 'system', content: textOf(m.content) };
    case 'user':
      return { role: 'user', content: userContent(m.content, `${param}.content`) };
    case 'assistant': {
      const text = textOf(m.content);
      return compact({ role: 'assistant', content: text || undefined, tool_calls: m.tool_calls?.length ? m.tool_calls : undefined });
    }
    case 'tool':
      return { role: 'tool', tool_call_id: m.tool_call_id, content: textOf(m.content) };
    default:
      throw badRequest(`Message role '${(m as { role: string }).role}' is not supported by Cohere.`, `${param}.role`);
  }
}

function toolsAndChoice(body: ChatRequest): { tools?: unknown[]; tool_choice?: string } {
  const tc = body.tool_choice;
  let tools = body.tools;
  if (tc && typeof tc === 'object') tools = tools?.filter((t) => t.function.name === tc.function.name);
  const choice = tc === 'required' || typeof tc === 'object' ? 'REQUIRED' : tc === 'none' ? 'NONE' : undefined;
  return {
    tools: tools?.map((t) => ({
      type: 'function',
      function: compact({ name: t.function.name, description: t.function.description, parameters: t.function.parameters }),
    })),
    tool_choice: choice,
  };
}

function responseFormat(body: ChatRequest): Record<string, unknown> | undefined {
  const rf = body.response_format;
  if (!rf) return undefined;
  if (rf.type === 'json_schema') return compact({ type: 'json_object', json_schema: rf.json_schema?.schema });
  return { type: rf.type };
}

export function cohereChatBody(body: ChatRequest): Record<string, unknown> {
  refuseUnhonoured(body, 'Cohere');
  const { tools, tool_choice } = toolsAndChoice(body);
  return compact({
    model: body.model,
    messages: withoutCacheMarks(body).messages.map(cohereMessage),
    tools,
    tool_choice,
    response_format: responseFormat(body),
    max_tokens: body.max_completion_tokens ?? body.max_tokens,
    stop_sequences: stopList(body.stop),
    temperature: body.temperature,
    p: body.top_p,
    k: typeof body.top_k === 'number' ? body.top_k : undefined,
    seed: body.seed,
    frequency_penalty: body.frequency_penalty,
    presence_penalty: body.presence_penalty,
    stream: body.stream ? true : undefined,
  });
}

type CohereChatResponse = {
  id?: string;
  finish_reason?: string;
  message?: { content?: Array<{ type: string; text?: string }>; tool_calls?: ToolCall[] };
  usage?: CohereUsage;
};

function embedBody(body: EmbeddingsRequest): Record<string, unknown> {
  const input = typeof body.input === 'string' ? [body.input] : body.input;
  if (!input.every((x): x is string => typeof x === 'string')) {
    throw badRequest('Cohere embeddings take text input only (no token arrays).', 'input');
  }
  return compact({
    model: body.model,
    texts: input,
    input_type: typeof body.input_type === 'string' ? body.input_type : 'search_document',
    embedding_types: ['float'],
    output_dimension: body.dimensions,
    truncate: typeof body.truncate === 'string' ? body.truncate : undefined,
  });
}

/** OpenAI's base64 embeddings are little-endian float32 arrays. */
function float32Base64(v: number[]): string {
  const bytes = Buffer.alloc(v.length * 4);
  v.forEach((x, i) => bytes.writeFloatLE(x, i * 4));
  return bytes.toString('base64');
}

export const cohere: ProviderAdapter = {
  slug: 'cohere',
  name: 'Cohere',
  baseUrl,
  authHeaders,
  models: {
    request: (target) => jsonGet(`${baseUrl(target).replace(/\/v[12]$/, '')}/v1/models?page_size=1000`, authHeaders(target), target),
    response: (upstream) =>
      ((upstream as { models?: Array<{ name?: unknown }> }).models ?? [])
        .filter((m) => typeof m.name === 'string')
        .map((m) => ({ id: m.name as string, object: 'model', created: 0, owned_by: 'cohere' })),
  },
  chat: {
    request: (body, target) => jsonPost(v2(target, 'chat'), cohereChatBody(body), authHeaders(target), target),
    response(upstream, ctx) {
      const r = upstream as CohereChatResponse;
      const text = (r.message?.content ?? [])
        .filter((b) => b.type === 'text')
        .map((b) => b.text ?? '')
        .join('');
      const toolCalls = r.message?.tool_calls ?? [];
      return completion(ctx, {
        id: r.id,
        content: toolCalls.length && !text ? null : text,
        toolCalls: toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.function.name, arguments: c.function.arguments ?? '{}' } })),
        finish: cohereFinish(r.finish_reason),
        usage: r.usage ? cohereUsage(r.usage) : undefined,
      });
    },
    stream: cohereStream,
  },
  embeddings: {
    request: (body, target) => jsonPost(v2(target, 'embed'), embedBody(body), authHeaders(target), target),
    response(upstream, ctx, request) {
      const r = upstream as { embeddings?: { float?: number[][] }; meta?: { billed_units?: { input_tokens?: number } } };
      const tokens = r.meta?.billed_units?.input_tokens ?? 0;
      const base64 = request?.encoding_format === 'base64';
      return {
        object: 'list',
        data: (r.embeddings?.float ?? []).map((v, index) => ({ object: 'embedding', index, embedding: base64 ? float32Base64(v) : v })),
        model: ctx.model,
        usage: { prompt_tokens: tokens, total_tokens: tokens },
      };
    },
  },
  rerank: {
    request: (body, target) =>
      jsonPost(
        v2(target, 'rerank'),
        compact({
          model: body.model,
          query: body.query,
          documents: body.documents.map(docText),
          top_n: body.top_n,
          max_tokens_per_doc: body.max_tokens_per_doc,
          priority: body.priority,
        }),
        authHeaders(target),
        target,
      ),
    response(upstream, body, ctx) {
      const r = upstream as { id?: string; results?: Array<{ index: number; relevance_score: number }>; meta?: { billed_units?: { search_units?: number } } };
      const items = (r.results ?? []).map((x) => ({ index: x.index, score: x.relevance_score }));
      return rerankResult('cohere', items, body, ctx, { id: r.id, searchUnits: r.meta?.billed_units?.search_units });
    },
  },
};

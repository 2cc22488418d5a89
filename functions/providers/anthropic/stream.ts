/**
 * Anthropic Messages stream -> OpenAI chunks. Tool calls are
 * numbered from 0 in the order their blocks start, not by Anthropic's block index.
 * Thinking, citations and server-tool blocks have no OpenAI chunk field and are dropped.
 */
import { isJsonAnswerTool, jsonAnswerFromArguments, JSON_ANSWER_TOOL } from '../_shared/json-answer';
import { chunk, invalidChunk, makeUsage, parseJson, usageChunk } from '../_shared/openai-shape';
import { sseTranslator } from '../_shared/sse';
import type { FinishReason, StreamError, StreamTranslator, TranslateContext, Usage } from '../types';

const FINISH: Record<string, FinishReason> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  tool_use: 'tool_calls',
  max_tokens: 'length',
  refusal: 'content_filter',
  model_context_window_exceeded: 'length',
};

export const finishReasonOf = (reason: string | null | undefined): FinishReason => (reason && FINISH[reason]) || 'stop';

/** Anthropic counts cached prompt tokens apart from input_tokens; OpenAI includes them. */
export function anthropicUsage(u: Record<string, number | undefined>): Usage {
  const cacheRead = u.cache_read_input_tokens ?? 0;
  const prompt = (u.input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0) + cacheRead;
  const usage = makeUsage(prompt, u.output_tokens ?? 0, cacheRead, u.cache_creation_input_tokens);
  // One-hour cache writes are billed at their own (higher) rate.
  const oneHour = u[CACHE_WRITE_1H];
  if (oneHour) usage.prompt_tokens_details = { ...usage.prompt_tokens_details, cache_write_1h_tokens: oneHour };
  return usage;
}

/** The flat count key for `cache_creation.ephemeral_1h_input_tokens`. */
const CACHE_WRITE_1H = 'cache_creation_1h_input_tokens';

/**
 * An Anthropic `usage` object as flat counts for anthropicUsage: its numeric fields (newer
 * streams send `null` for counts they do not update) and the one-hour cache writes.
 */
export function usageCounts(u: unknown): Record<string, number> {
  const out: Record<string, number> = {};
  if (!u || typeof u !== 'object') return out;
  for (const [key, value] of Object.entries(u)) if (typeof value === 'number') out[key] = value;
  const oneHour = (u as { cache_creation?: { ephemeral_1h_input_tokens?: unknown } }).cache_creation?.ephemeral_1h_input_tokens;
  if (typeof oneHour === 'number') out[CACHE_WRITE_1H] = oneHour;
  return out;
}

const ERROR_STATUS: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

function streamError(error: { type?: string; message?: string } | undefined): StreamError {
  const type = error?.type ?? 'api_error';
  return { status: ERROR_STATUS[type] ?? 502, message: error?.message ?? 'Anthropic reported an error mid-stream.', type, code: type };
}

type Event = {
  type?: string;
  index?: number;
  message?: { id?: string; usage?: Record<string, unknown> };
  content_block?: { type?: string; id?: string; name?: string; text?: string };
  delta?: { type?: string; text?: string; partial_json?: string; stop_reason?: string | null };
  usage?: Record<string, unknown>;
  error?: { type?: string; message?: string };
};

export function anthropicStream(ctx: TranslateContext): StreamTranslator {
  const state = { ...ctx };
  const toolIndex = new Map<number, number>();
  /** The answer tool's block (structured output): its input is streamed as content. */
  let answer: { index: number; name: string; json: string } | undefined;
  let counts: Record<string, number> | undefined;
  let finished = false;

  const usage = () => (counts ? anthropicUsage(counts) : undefined);
  return sseTranslator({
    usage,
    event(ev, out, done) {
      // Anthropic sends no [DONE], but an OpenAI-minded proxy in front of it may.
      if (ev.data.trim() === '[DONE]') return done();
      const data = parseJson(ev.data) as Event | undefined;
      const type = data?.type ?? ev.event;
      if (ev.event === 'error' || type === 'error') {
        out.error = streamError(data?.error);
        return;
      }
      if (!data) {
        out.error = invalidChunk('Anthropic');
        return;
      }
      switch (type) {
        case 'message_start':
          if (data.message?.id) state.id = data.message.id;
          counts = usageCounts(data.message?.usage);
          out.chunks.push(chunk(state, { role: 'assistant', content: '' }));
          break;
        case 'content_block_start': {
          const block = data.content_block;
          if (block?.type === 'tool_use' && isJsonAnswerTool(block.name)) {
            answer = { index: data.index ?? -1, name: block.name!, json: '' };
          } else if (block?.type === 'tool_use') {
            const k = toolIndex.size;
            toolIndex.set(data.index ?? k, k);
            const call = { index: k, id: block.id, type: 'function' as const, function: { name: block.name, arguments: '' } };
            out.chunks.push(chunk(state, { tool_calls: [call] }));
          } else if (block?.type === 'text' && block.text) {
            out.chunks.push(chunk(state, { content: block.text }));
          }
          break;
        }
        case 'content_block_delta': {
          const delta = data.delta;
          if (delta?.type === 'text_delta' && delta.text) out.chunks.push(chunk(state, { content: delta.text }));
          if (answer && data.index === answer.index && delta?.type === 'input_json_delta' && delta.partial_json) {
            // An object answer streams as it comes; a wrapped value waits for its block's end.
            if (answer.name === JSON_ANSWER_TOOL) out.chunks.push(chunk(state, { content: delta.partial_json }));
            else answer.json += delta.partial_json;
            break;
          }
          const k = toolIndex.get(data.index ?? -1);
          if (delta?.type === 'input_json_delta' && delta.partial_json && k !== undefined) {
            out.chunks.push(chunk(state, { tool_calls: [{ index: k, function: { arguments: delta.partial_json } }] }));
          }
          break;
        }
        case 'message_delta':
          // message_delta usage is cumulative, so its numbers replace message_start's.
          counts = { ...counts, ...usageCounts(data.usage) };
          if (data.delta?.stop_reason) {
            finished = true;
            const answered = answer && !toolIndex.size && data.delta.stop_reason === 'tool_use';
            out.chunks.push(chunk(state, {}, answered ? 'stop' : finishReasonOf(data.delta.stop_reason)));
          }
          break;
        case 'content_block_stop':
          if (answer && data.index === answer.index && answer.name !== JSON_ANSWER_TOOL) {
            out.chunks.push(chunk(state, { content: jsonAnswerFromArguments(answer.name, answer.json) }));
          }
          break;
        case 'message_stop':
          done();
          break;
        default:
          // ping and unknown events carry nothing for OpenAI chunks.
          break;
      }
    },
    finish(out) {
      const u = usage();
      if (ctx.includeUsage && finished && u) out.chunks.push(usageChunk(state, u));
    },
  });
}

/**
 * Cohere v2 chat stream -> OpenAI chunks. Tool calls are numbered from 0
 * in the order they start. Thinking, tool plans, citations and debug events have no
 * OpenAI chunk field and are dropped.
 */
import { chunk, invalidChunk, makeUsage, parseJson, usageChunk } from '../_shared/openai-shape';
import { sseTranslator } from '../_shared/sse';
import type { FinishReason, StreamTranslator, TranslateContext, Usage } from '../types';

const FINISH: Record<string, FinishReason> = {
  COMPLETE: 'stop',
  STOP_SEQUENCE: 'stop',
  MAX_TOKENS: 'length',
  TOOL_CALL: 'tool_calls',
  ERROR: 'stop',
  TIMEOUT: 'stop',
};

export const cohereFinish = (reason: unknown): FinishReason => (typeof reason === 'string' && FINISH[reason]) || 'stop';

export type CohereUsage = {
  billed_units?: { input_tokens?: number; output_tokens?: number };
  tokens?: { input_tokens?: number; output_tokens?: number };
  cached_tokens?: number;
};

/** Billed units are what Cohere charges; raw token counts are the fallback. */
export function cohereUsage(u: CohereUsage): Usage {
  const prompt = u.billed_units?.input_tokens ?? u.tokens?.input_tokens ?? 0;
  const completion = u.billed_units?.output_tokens ?? u.tokens?.output_tokens ?? 0;
  return makeUsage(prompt, completion, u.cached_tokens);
}

type ToolCallDelta = { id?: string; type?: 'function'; function?: { name?: string; arguments?: string } };
type Event = {
  type?: string;
  id?: string;
  index?: number;
  delta?: {
    message?: { content?: { type?: string; text?: string }; tool_calls?: ToolCallDelta };
    finish_reason?: string;
    usage?: CohereUsage;
  };
};

export function cohereStream(ctx: TranslateContext): StreamTranslator {
  const state = { ...ctx };
  const toolIndex = new Map<number, number>();
  let usage: Usage | undefined;
  let finished = false;

  return sseTranslator({
    usage: () => usage,
    event(ev, out, done) {
      if (ev.data.trim() === '[DONE]') return done();
      const data = parseJson(ev.data) as Event | undefined;
      if (!data) {
        out.error = invalidChunk('Cohere');
        return;
      }
      const message = data.delta?.message;
      switch (data.type ?? ev.event) {
        case 'message-start':
          if (data.id) state.id = data.id;
          out.chunks.push(chunk(state, { role: 'assistant', content: '' }));
          break;
        case 'content-start':
        case 'content-delta':
          if (message?.content?.text) out.chunks.push(chunk(state, { content: message.content.text }));
          break;
        case 'tool-call-start': {
          const k = toolIndex.size;
          toolIndex.set(data.index ?? k, k);
          const call = message?.tool_calls;
          const fn = { name: call?.function?.name, arguments: call?.function?.arguments ?? '' };
          out.chunks.push(chunk(state, { tool_calls: [{ index: k, id: call?.id, type: 'function', function: fn }] }));
          break;
        }
        case 'tool-call-delta': {
          const k = toolIndex.get(data.index ?? -1);
          const args = message?.tool_calls?.function?.arguments;
          if (k !== undefined && args) out.chunks.push(chunk(state, { tool_calls: [{ index: k, function: { arguments: args } }] }));
          break;
        }
        case 'message-end':
          if (data.delta?.usage) usage = cohereUsage(data.delta.usage);
          finished = true;
          out.chunks.push(chunk(state, {}, cohereFinish(data.delta?.finish_reason)));
          done();
          break;
        default:
          break;
      }
    },
    finish(out) {
      if (ctx.includeUsage && finished && usage) out.chunks.push(usageChunk(state, usage));
    },
  });
}

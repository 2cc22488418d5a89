/** Builders of unified chat chunks and completions for the format encoder tests. */
import type { ChatCompletion, ChatCompletionChunk, FinishReason, Usage } from '../../functions/providers/types';

type Delta = ChatCompletionChunk['choices'][number]['delta'];

export const usage = (prompt: number, completion: number, cached = 0): Usage => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  total_tokens: prompt + completion,
  prompt_tokens_details: { cached_tokens: cached },
});

export function chunk(delta: Delta, finish: FinishReason | null = null): ChatCompletionChunk {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: 'up-model',
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
}

export const text = (content: string) => chunk({ content });
export const finish = (reason: FinishReason) => chunk({}, reason);
export const usageChunk = (u: Usage): ChatCompletionChunk => ({ ...chunk({}), choices: [], usage: u });
export const callStart = (index: number, id: string, name: string, args = '') =>
  chunk({ tool_calls: [{ index, id, type: 'function', function: { name, arguments: args } }] });
export const callArgs = (index: number, args: string) => chunk({ tool_calls: [{ index, function: { arguments: args } }] });

export function completion(message: ChatCompletion['choices'][number]['message'], reason: FinishReason, u?: Usage): ChatCompletion {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'up-model',
    choices: [{ index: 0, message, logprobs: null, finish_reason: reason }],
    ...(u ? { usage: u } : {}),
  };
}

/** A fetch that answers every request with this body (SSE text or JSON) and records requests. */
export function fakeFetch(body: string, contentType: string, requests: unknown[] = []): typeof fetch {
  return (async (_url: unknown, init?: { body?: unknown }) => {
    if (typeof init?.body === 'string') requests.push(JSON.parse(init.body));
    return new Response(body, { status: 200, headers: { 'content-type': contentType } });
  }) as typeof fetch;
}

/** The chunks as an async stream that throws `failure` after the last one, like the chat core's. */
export async function* chunkStream(chunks: ChatCompletionChunk[], failure?: Error): AsyncGenerator<ChatCompletionChunk> {
  for (const c of chunks) yield c;
  if (failure) throw failure;
}

export async function collect(parts: AsyncIterable<string>): Promise<string> {
  let out = '';
  for await (const part of parts) out += part;
  return out;
}

/**
 * Drive a stream encoder (Responses, Messages or Gemini) over the chat core's chunk stream and
 * yield SSE text. A GatewayError thrown by the chunk stream (a provider failure mid-stream)
 * ends the stream the API's way (`fail`); anything else is reported as a generic server
 * error without internals. The encoder's `response`/`message` getter then holds the final
 * object for storage or logs.
 */
import type { ChatCompletionChunk } from '../providers/types';
import { asGatewayError } from '../shared/errors';
import { sseFrame, type StreamFailure } from './sse';

export interface ChunkEncoder<E = { type: string }> {
  push(chunk: ChatCompletionChunk): E[];
  end(): E[];
  fail(failure: StreamFailure): E[];
}

/** `frame` writes one event (default: a named SSE event, as Responses and Messages send them). */
export async function* encodeChunks<E = { type: string }>(
  encoder: ChunkEncoder<E>,
  chunks: AsyncIterable<ChatCompletionChunk>,
  frame: (event: E) => string = sseFrame as (event: E) => string,
): AsyncGenerator<string, void, undefined> {
  let events: E[];
  try {
    for await (const chunk of chunks) {
      events = encoder.push(chunk);
      if (events.length) yield events.map(frame).join('');
    }
    events = encoder.end();
  } catch (err) {
    events = encoder.fail(asGatewayError(err));
  }
  yield events.map(frame).join('');
}

/**
 * Drive a stream encoder (Responses or Messages) over the chat core's chunk stream and
 * yield SSE text. A GatewayError thrown by the chunk stream (a provider failure mid-stream)
 * ends the stream the API's way (`fail`); anything else is reported as a generic server
 * error without internals. The encoder's `response`/`message` getter then holds the final
 * object for storage or logs.
 */
import type { ChatCompletionChunk } from '../providers/types';
import { asGatewayError } from '../shared/errors';
import { sseFrame, type StreamFailure } from './sse';

export interface ChunkEncoder {
  push(chunk: ChatCompletionChunk): Array<{ type: string }>;
  end(): Array<{ type: string }>;
  fail(failure: StreamFailure): Array<{ type: string }>;
}

export async function* encodeChunks(encoder: ChunkEncoder, chunks: AsyncIterable<ChatCompletionChunk>): AsyncGenerator<string, void, undefined> {
  let events: Array<{ type: string }>;
  try {
    for await (const chunk of chunks) {
      events = encoder.push(chunk);
      if (events.length) yield events.map(sseFrame).join('');
    }
    events = encoder.end();
  } catch (err) {
    events = encoder.fail(asGatewayError(err));
  }
  yield events.map(sseFrame).join('');
}

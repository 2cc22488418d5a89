import { Readable } from 'node:stream';
import { responsesRequestSchema } from '../../formats/responses/schema';
import { sseFrame } from '../../formats/sse';
import type { ResponsesStreamEvent } from '../../formats/responses/types';
import { keep, previousConversation, withReferencesResolved } from '../../gateway/openai-responses/route';
import { openAIFailureResponse } from '../../gateway/responses';
import { asGatewayError } from '../../shared/errors';
import { json, mergeHeaders } from '../../shared/http/response';
import { SSE_HEADERS } from '../../shared/http/sse';
import type { GatewayRequest, HttpResponse } from '../../shared/http/types';
import { parseInput } from '../../shared/validation';
import { COMMITTED, runUntilCommitted, type LoopStep } from './engine';
import { McpToolLoop } from './loop';

const frames = (events: ResponsesStreamEvent[]) => events.map(sseFrame).join('');

/** Run the tool loop of a Responses request: one JSON response, or its event stream. */
export async function runMcpResponse(req: GatewayRequest): Promise<HttpResponse> {
  const body = await withReferencesResolved(req, parseInput(responsesRequestSchema, req.json()));
  const previous = await previousConversation(req, body);
  const stream = body.stream === true;
  const loop = new McpToolLoop({ req, body, previous, stream });
  await loop.prepare();
  const steps = loop.steps();
  // Up to the first model turn, a failure is the HTTP answer (nothing is sent yet).
  const early: ResponsesStreamEvent[] = [];
  const failure = await runUntilCommitted(steps, stream, early, (err) => openAIFailureResponse(err.outcome.dispatched));
  if (failure) return failure;
  if (!stream) {
    const response = loop.builder.response!;
    await keep(req, body, previous, response);
    return json(loop.loop.status, response, loop.loop.headers);
  }

  async function* sse(): AsyncGenerator<string, void, undefined> {
    yield frames(early);
    let kept = false;
    const send = async (step: LoopStep<ResponsesStreamEvent>) => {
      if (step === COMMITTED) return '';
      // The completed response is stored before the caller sees it end.
      if (!kept && loop.builder.response) {
        kept = true;
        await keep(req, body, previous, loop.builder.response);
      }
      return frames(step);
    };
    try {
      for await (const step of steps) {
        const text = await send(step);
        if (text) yield text;
      }
    } catch (err) {
      loop.builder.fail(asGatewayError(err));
      yield frames(loop.builder.drain());
    }
  }
  return { statusCode: loop.loop.status, headers: mergeHeaders(SSE_HEADERS, loop.loop.headers), body: Readable.from(sse(), { objectMode: false }) };
}

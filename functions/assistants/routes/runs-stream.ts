import { asGatewayError, invalidState } from '../../shared/errors';
import { SSE_HEADERS } from '../../shared/http/sse';
import type { HttpResponse } from '../../shared/http/types';
import { afterResponse, type RequestContext } from '../../shared/telemetry/context';
import { log } from '../../shared/telemetry/logger';
import { cancelRunNow, runModelStep, startRunNow } from '../engine/model-step';
import { submitToolOutputsToRun } from '../engine/submit';
import { SseRunEvents } from '../engine/events';
import { getRun, runRef, type RunRecord } from '../store/runs';
import type { Run, Thread, ToolOutput } from '../types';

/**
 * Streamed runs (issue item 4): the engine runs inline in the response-streaming handler
 * and the caller gets the OpenAI assistant events as they happen, ending with
 * `event: done` / `data: [DONE]` once the run is terminal or requires action. One
 * request makes at most one model call (tool calls end the stream at requires_action).
 *
 * A caller that disconnects mid-run stops it: the model call is aborted and the run
 * ends `cancelled` (its message `incomplete`, reason `run_cancelled`), since nobody is
 * left to read or continue it. An engine failure (not a provider one: those end the run
 * `failed` with last_error) is reported as `event: error` before the end.
 */

/** Answer with an SSE body now; `work` writes the events. The invocation waits for it to end. */
function streamResponse(ctx: RequestContext, runId: string, work: (events: SseRunEvents) => Promise<void>): HttpResponse {
  const events = new SseRunEvents();
  const finished = work(events)
    .catch((err: unknown) => {
      log.error('streamed run failed', { run_id: runId, error: err instanceof Error ? err.message : String(err) }, ctx);
      events.error(asGatewayError(err).toBody());
    })
    .finally(() => events.finish());
  afterResponse(ctx, () => finished);
  return { statusCode: 200, headers: { ...SSE_HEADERS }, body: events.sse.stream };
}

/** One model step inline; a run found in another state is reported (and a cancel finished). */
async function executeStreamed(ctx: RequestContext, record: RunRecord, events: SseRunEvents): Promise<void> {
  const outcome = await runModelStep(record, events, ctx);
  if (outcome.executed) return;
  const run = outcome.run.status === 'cancelling' ? ((await cancelRunNow(record, events))?.run ?? outcome.run) : outcome.run;
  if (run.status !== 'cancelled' || outcome.run.status !== 'cancelling') events.emit(`thread.run.${run.status}`, run);
}

/** A run just created `queued` (and its new thread, for create thread-and-run). */
export function streamNewRun(ctx: RequestContext, record: RunRecord, thread?: Thread): HttpResponse {
  return streamResponse(ctx, record.run.id, async (events) => {
    if (thread) events.emit('thread.created', thread);
    events.emit('thread.run.created', record.run);
    events.emit('thread.run.queued', record.run);
    await startRunNow(record, events, { inline: true });
    await executeStreamed(ctx, record, events);
  });
}

async function resume(record: RunRecord, outputs: ToolOutput[]) {
  const resumed = await submitToolOutputsToRun(record, outputs, { inline: true });
  if (resumed) return resumed;
  const now = (await getRun(runRef(record)))?.run.status ?? 'deleted';
  throw invalidState(`Run ${record.run.id} is '${now}'; tool outputs are accepted only in 'requires_action'.`, 'run_not_requires_action');
}

/** submit_tool_outputs with `stream: true`: outputs stored before the stream starts (errors stay HTTP errors). */
export async function streamSubmit(ctx: RequestContext, record: RunRecord, outputs: ToolOutput[]): Promise<HttpResponse> {
  const { record: resumed, step } = await resume(record, outputs);
  return streamResponse(ctx, record.run.id, async (events) => {
    events.emit('thread.run.step.completed', step);
    events.emit('thread.run.in_progress', resumed.run);
    await executeStreamed(ctx, resumed, events);
  });
}

/**
 * submit_tool_outputs without `stream` on a run that a streaming request executes (no
 * workflow waits for it): outputs stored now, the next model step runs after the answer,
 * in the same invocation (it waits for after-response work); the caller polls.
 */
export async function submitInline(ctx: RequestContext, record: RunRecord, outputs: ToolOutput[]): Promise<Run> {
  const { record: resumed } = await resume(record, outputs);
  // The step gets a context of its own: it runs after the answer, when the request's
  // after-response work has already been collected.
  afterResponse(ctx, () =>
    runModelStep(resumed)
      .then(() => undefined)
      .catch((err: unknown) => log.error('inline run step failed', { run_id: resumed.run.id, error: err instanceof Error ? err.message : String(err) }, ctx)),
  );
  return resumed.run;
}

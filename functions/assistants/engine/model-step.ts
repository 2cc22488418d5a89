import { createHash } from 'node:crypto';
import { flushAfterResponse, newRequestContext, type RequestContext } from '../../shared/telemetry/context';
import { log, type LogContext } from '../../shared/telemetry/logger';
import { callModel, type ModelCallResult } from './call';
import { loadRunTurns, loadThreadMessages } from './context';
import { CallWriter, messageEvent, stepEvent } from './output';
import { buildChatRequest } from './request';
import { addUsage, callIds, callsGuard, claimCallClock, commitGuard, executorLeaseUntil, loadRunState, renewLease, type EngineState } from './state';
import { getMessage, updateMessage } from '../store/messages';
import { NO_EVENTS, type RunEventSink } from './events';
import { getRun, runRef, transitionRun, type RunPatch, type RunRecord, type RunRef, type TransitionGuard } from '../store/runs';
import { listSteps, transitionStep } from '../store/steps';
import { isTerminal, nowSeconds, type Run, type RunStatus, type ToolCall, type Usage } from '../types';

/**
 * The run engine: one model step of a run, shared by streamed runs (inline,
 * events to the caller) and the workflow (a Step Functions task, no events).
 *
 * runModelStep(record) acts on a run that is `queued` (it starts it) or `in_progress`:
 * it calls the model once (call index k = the calls committed so far) and commits the
 * result with one conditional transition guarded by `engine_calls = k`:
 *   tool calls -> `requires_action` (required_action.submit_tool_outputs.tool_calls)
 *   final text -> `completed` (usage summed over the run's calls)
 *   over max_prompt_tokens / max_completion_tokens -> `incomplete` (incomplete_details.reason)
 *   provider failure (after the gateway's retries) -> `failed` (last_error)
 * In any other state it changes nothing and reports `executed: false`: a duplicate or
 * late delivery is a no-op. Steps and messages of call k have deterministic ids, so even
 * a concurrent duplicate of the same call writes one message and one step.
 */

export interface StepOutcome {
  /** The run after this step (requires_action, a terminal state, or as found). */
  run: Run;
  /** False when this delivery found nothing to do and changed nothing. */
  executed: boolean;
}

/**
 * Run `fn` in the request's context when a request runs the engine inline (its request
 * logs and token usage join the request's after-response work), else in a context of its
 * own (a workflow task, or a step after the response), whose after-response work is
 * flushed at the end.
 */
async function inEngineContext<T>(traceId: string, fn: (ctx: RequestContext) => Promise<T>, parent: RequestContext | undefined): Promise<T> {
  if (parent) return fn(parent);
  const ctx = newRequestContext(traceId);
  try {
    return await fn(ctx);
  } finally {
    await flushAfterResponse(ctx, (err) => log.error('engine after-response task failed', { error: String(err) }, ctx));
  }
}

/** One model step of a run; `parent` is the request that runs it inline, if any. */
export function runModelStep(record: RunRecord, events: RunEventSink = NO_EVENTS, parent?: RequestContext): Promise<StepOutcome> {
  return inEngineContext(record.run.id, (ctx) => modelStep(record, events, ctx), parent);
}

/**
 * The entry of a workflow task (input: the run's reference). Retry it freely on errors:
 * a repeated delivery of the same call writes nothing twice and commits at most once.
 */
export async function runModelStepByRef(ref: RunRef): Promise<StepOutcome> {
  const record = await getRun(ref);
  if (!record) throw new Error(`run ${ref.runId} not found`);
  return runModelStep(record);
}

/** `queued` -> `in_progress` (started_at); `inline` marks a run executed by a streaming request. */
export async function startRunNow(record: RunRecord, events: RunEventSink = NO_EVENTS, opts: { inline?: boolean } = {}): Promise<RunRecord | undefined> {
  const guard = opts.inline ? { condition: 'attribute_exists(pk)', set: { engine_inline: true, executor_lease_until: executorLeaseUntil() } } : undefined;
  const started = await transitionRun(runRef(record), ['queued'], { status: 'in_progress', started_at: nowSeconds() }, guard);
  if (started) events.emit('thread.run.in_progress', started.run);
  return started;
}

function budgetReason(run: Run, used: Usage): 'max_prompt_tokens' | 'max_completion_tokens' | undefined {
  if (run.max_prompt_tokens !== null && used.prompt_tokens >= run.max_prompt_tokens) return 'max_prompt_tokens';
  if (run.max_completion_tokens !== null && used.completion_tokens >= run.max_completion_tokens) return 'max_completion_tokens';
  return undefined;
}

/** Which token limit (if any) a call's result put the run over. */
export function limitReason(run: Run, total: Usage, finish: string | null): 'max_prompt_tokens' | 'max_completion_tokens' | undefined {
  if (run.max_prompt_tokens !== null && total.prompt_tokens > run.max_prompt_tokens) return 'max_prompt_tokens';
  if (run.max_completion_tokens !== null && (finish === 'length' || total.completion_tokens > run.max_completion_tokens)) return 'max_completion_tokens';
  return undefined;
}

async function modelStep(input: RunRecord, events: RunEventSink, ctx: RequestContext): Promise<StepOutcome> {
  const ref = runRef(input);
  let loaded = await loadRunState(ref);
  if (!loaded) throw new Error(`run ${ref.runId} not found`);
  if (loaded.record.run.status === 'queued') {
    await startRunNow(loaded.record, events);
    loaded = await loadRunState(ref);
  }
  if (loaded?.record.run.status !== 'in_progress') return { run: (loaded ?? { record: input }).record.run, executed: false };
  const { record, state } = loaded;
  const k = state.calls;
  const over = budgetReason(record.run, state.usage);
  if (over) return commit(ctx, record, k, events, { status: 'incomplete', incomplete_details: { reason: over }, usage: state.usage }, callsGuard(k));
  const clock = await claimCallClock(ref, k);
  if (clock === undefined) return { run: record.run, executed: false };
  const writer = new CallWriter(record, callIds(record.run.id, k, clock), events);
  const { thread, own } = await loadThreadMessages(record);
  const turns = await loadRunTurns(record, own);
  const chat = buildChatRequest({ run: record.run, threadMessages: thread, turns, used: state.usage });
  const watch = watchRun(ref, events.signal, state.inline);
  let result: ModelCallResult;
  try {
    result = watch.signal.aborted
      ? { kind: 'aborted', usage: null }
      : await callModel(ctx, record, chat, { text: (d) => writer.onText(d), toolCall: (d) => writer.onToolCall(d) }, watch.signal);
  } finally {
    watch.stop();
  }
  return settle(ctx, record, state, k, writer, result, events);
}

/** How often a model call checks whether its run was cancelled meanwhile. */
export const CANCEL_CHECK_MS = 1000;

/**
 * A signal that aborts the model call when the listener goes away, or the run is being
 * cancelled or has ended (checked every CANCEL_CHECK_MS while the call lasts). An inline
 * run's check is the renewal of its executor's lease (one write instead of the read): the
 * run reconciler ends an inline run whose lease lapsed (workflow/recovery.ts).
 */
function watchRun(ref: RunRef, outer: AbortSignal | undefined, inline: boolean): { signal: AbortSignal; stop(): void } {
  const controller = new AbortController();
  const abort = () => controller.abort();
  if (outer?.aborted) abort();
  outer?.addEventListener('abort', abort, { once: true });
  const timer = setInterval(() => {
    (inline ? renewLease(ref) : getRun(ref)).then((r) => (!r || r.run.status === 'cancelling' || isTerminal(r.run.status)) && abort()).catch(() => undefined);
  }, CANCEL_CHECK_MS);
  timer.unref();
  return {
    signal: controller.signal,
    stop: () => {
      clearInterval(timer);
      outer?.removeEventListener('abort', abort);
    },
  };
}

/** Tool calls without an id (some providers) get a deterministic one. */
function withIds(runId: string, k: number, calls: ToolCall[]): ToolCall[] {
  return calls.map((c, i) => (c.id ? c : { ...c, id: `call_${createHash('sha256').update(`${runId}:${k}:${i}`).digest('hex').slice(0, 24)}` }));
}

/**
 * Commit the call's result. Success (requires_action, completed) writes its items first,
 * so a reader who sees the run's new status finds them complete; an ending that abandons
 * the call (cancelled, failed, incomplete) moves the run first and closes the items only
 * if this execution won, so it never touches items another execution of the call owns.
 */
async function settle(
  ctx: LogContext,
  record: RunRecord,
  state: EngineState,
  k: number,
  writer: CallWriter,
  result: ModelCallResult,
  events: RunEventSink,
): Promise<StepOutcome> {
  const usage = addUsage(state.usage, result.usage);
  const guard = commitGuard(k, usage, null);
  if (result.kind === 'aborted') {
    // Cancelled while the model was answering, or the streaming caller went away (nobody
    // reads or continues this run any more): the call stops and the run ends cancelled.
    log.info('run stopped during a model call', { run_id: record.run.id, client_disconnected: Boolean(events.signal?.aborted) }, ctx);
    return commit(ctx, record, k, events, { status: 'cancelled', usage }, guard, ['in_progress', 'cancelling'], async () => {
      await writer.closeMessage('incomplete', 'run_cancelled', { status: 'cancelled' });
      await writer.closeToolStep({ status: 'cancelled' });
    });
  }
  if (result.kind === 'error') {
    const lastError = result.error;
    log.warn('run failed: model call failed', { run_id: record.run.id, code: lastError.code }, ctx);
    return commit(ctx, record, k, events, { status: 'failed', last_error: lastError, usage }, guard, ['in_progress'], async () => {
      await writer.closeMessage('incomplete', 'run_failed', { status: 'failed', last_error: lastError });
      await writer.closeToolStep({ status: 'failed', last_error: lastError });
    });
  }
  const calls = withIds(record.run.id, k, result.toolCalls);
  const reason = limitReason(record.run, usage, result.finish);
  if (reason) {
    const truncated = reason === 'max_completion_tokens';
    return commit(ctx, record, k, events, { status: 'incomplete', incomplete_details: { reason }, usage }, guard, ['in_progress'], async () => {
      await writer.closeMessage(truncated ? 'incomplete' : 'completed', truncated ? 'max_tokens' : null, { status: 'completed', usage: result.usage });
      await writer.closeToolStep({ status: 'cancelled' }, calls);
    });
  }
  if (calls.length) {
    await writer.recordToolCalls(calls);
    const required_action = { type: 'submit_tool_outputs' as const, submit_tool_outputs: { tool_calls: calls } };
    return commit(ctx, record, k, events, { status: 'requires_action', required_action }, commitGuard(k, usage, result.usage));
  }
  // The provider stopped the answer (its filter): the run completes with what was said,
  // the message is marked cut short, as OpenAI's `incomplete_details.reason` does.
  const filtered = result.finish === 'content_filter';
  await writer.openMessage();
  await writer.closeMessage(filtered ? 'incomplete' : 'completed', filtered ? 'content_filter' : null, { status: 'completed', usage: result.usage });
  return commit(ctx, record, k, events, { status: 'completed', usage }, guard);
}

/** The conditional transition of a call (then `after`, if it won); reports a run that moved on. */
async function commit(
  ctx: LogContext,
  record: RunRecord,
  k: number,
  events: RunEventSink,
  patch: RunPatch,
  guard: TransitionGuard,
  from: RunStatus[] = ['in_progress'],
  after?: () => Promise<void>,
): Promise<StepOutcome> {
  const done = await transitionRun(runRef(record), from, patch, guard);
  if (done) {
    await after?.();
    events.emit(`thread.run.${done.run.status}`, done.run);
    return { run: done.run, executed: true };
  }
  // Someone else moved the run meanwhile: a cancel, a duplicate execution, an expiry.
  const current = await loadRunState(runRef(record));
  if (!current) throw new Error(`run ${record.run.id} disappeared`);
  if (current.record.run.status === 'cancelling') {
    const cancelled = await cancelRunNow(current.record, events);
    if (cancelled) return { run: cancelled.run, executed: true };
  }
  const now = (await loadRunState(runRef(record)))?.record.run ?? current.record.run;
  log.info('run step not committed: the run moved on', { run_id: record.run.id, call: k, status: now.status }, ctx);
  return { run: now, executed: false };
}

/**
 * `cancelling` -> `cancelled` (usage so far), then its open steps are cancelled and its
 * open message is left incomplete (`run_cancelled`). Undefined when the run was not cancelling.
 */
export async function cancelRunNow(record: RunRecord, events: RunEventSink = NO_EVENTS): Promise<RunRecord | undefined> {
  const ref = runRef(record);
  const loaded = await loadRunState(ref);
  if (!loaded) return undefined;
  const done = await transitionRun(ref, ['cancelling'], { status: 'cancelled', usage: loaded.state.usage });
  if (!done) return undefined;
  await closeOpenSteps(done, 'cancelled', 'run_cancelled', events);
  events.emit('thread.run.cancelled', done.run);
  return done;
}

/** Finish every in_progress step of a run that has ended (and its open message). */
export async function closeOpenSteps(
  record: RunRecord,
  status: 'cancelled' | 'expired' | 'failed',
  reason: string,
  events: RunEventSink = NO_EVENTS,
): Promise<void> {
  const ref = runRef(record);
  const steps = await listSteps(ref, { limit: 100, order: 'asc' });
  for (const step of steps.items.filter((s) => s.status === 'in_progress')) {
    if (step.step_details.type === 'message_creation') {
      const { workspaceId, run } = record;
      const id = step.step_details.message_creation.message_id;
      const now = nowSeconds();
      const patch = { status: 'incomplete' as const, incomplete_at: now, incomplete_details: { reason } };
      const message =
        (await updateMessage(workspaceId, run.thread_id, id, patch, { whileInProgress: true })) ?? (await getMessage(workspaceId, run.thread_id, id));
      if (message) events.emit(messageEvent(message), message);
    }
    const closed = await transitionStep(ref, step.id, { status });
    if (closed) events.emit(stepEvent(closed), closed);
  }
}

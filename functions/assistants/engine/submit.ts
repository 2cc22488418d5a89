import { closeOpenSteps } from './model-step';
import { callIds, callsGuard, executorLeaseUntil, loadRunState, ZERO_USAGE } from './state';
import { runRef, transitionRun, type RunRecord, type RunRef } from '../store/runs';
import { getStep, listSteps, transitionStep } from '../store/steps';
import { nowSeconds, type RunStep, type StepDetails, type ToolOutput } from '../types';

/**
 * Tool outputs for a run in `requires_action` (ids already checked by the route): they
 * are stored on the waiting tool_calls step (completed, with the call's usage), then the
 * run moves `requires_action` -> `in_progress`, both conditionally. The next model step
 * (inline, or the workflow resumed by its task token) reads them from the step.
 */

export interface Resumed {
  record: RunRecord;
  /** The tool_calls step, now completed with the outputs. */
  step: RunStep;
  /** `engine_calls` of the wait these outputs ended (workflow/steps.ts keys its task token by it). */
  calls: number;
}

async function openToolStep(ref: RunRef, preferred: string | undefined): Promise<RunStep | undefined> {
  const direct = preferred ? await getStep(ref, preferred) : undefined;
  if (direct?.step_details.type === 'tool_calls') return direct;
  const steps = await listSteps(ref, { limit: 100, order: 'desc' });
  return steps.items.find((s) => s.step_details.type === 'tool_calls' && s.status === 'in_progress');
}

/**
 * Store the outputs and resume the run. Undefined when the run no longer waits for them
 * (another submit won, it was cancelled, or it passed `expires_at`, which expires it now).
 * `inline` marks the run as executed by a streaming request from here on.
 */
export async function submitToolOutputsToRun(record: RunRecord, outputs: ToolOutput[], opts: { inline?: boolean } = {}): Promise<Resumed | undefined> {
  const ref = runRef(record);
  const loaded = await loadRunState(ref);
  if (loaded?.record.run.status !== 'requires_action') return undefined;
  const { record: current, state } = loaded;
  const expiresAt = current.run.expires_at;
  if (expiresAt !== null && expiresAt <= nowSeconds()) {
    const expired = await transitionRun(ref, ['requires_action'], { status: 'expired', usage: state.usage });
    if (expired) await closeOpenSteps(expired, 'expired', 'run_expired');
    return undefined;
  }
  const k = state.calls - 1;
  const preferred = state.clock?.call === k ? callIds(current.run.id, k, state.clock.ms).toolStep : undefined;
  const step = await openToolStep(ref, preferred);
  if (step?.step_details.type !== 'tool_calls') return undefined;
  const given = new Map(outputs.map((o) => [o.tool_call_id, o.output]));
  const details: StepDetails = {
    type: 'tool_calls',
    tool_calls: step.step_details.tool_calls.map((c) => ({ ...c, function: { ...c.function, output: given.get(c.id) ?? c.function.output ?? null } })),
  };
  let stored = await transitionStep(ref, step.id, { status: 'completed', step_details: details, usage: state.pendingUsage ?? ZERO_USAGE });
  if (!stored) {
    // Completed already: a concurrent submit, or an earlier attempt that stopped before
    // the run moved. The run's own conditional transition below decides.
    const now = await getStep(ref, step.id);
    if (now?.status !== 'completed') return undefined;
    stored = now;
  }
  const resumed = await transitionRun(
    ref,
    ['requires_action'],
    { status: 'in_progress' },
    callsGuard(state.calls, { engine_pending_usage: null, ...(opts.inline ? { engine_inline: true, executor_lease_until: executorLeaseUntil() } : {}) }),
  );
  return resumed ? { record: resumed, step: stored, calls: state.calls } : undefined;
}

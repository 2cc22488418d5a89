import { log } from '../../shared/telemetry/logger';
import { closeOpenSteps } from './model-step';
import { loadRunState, type EngineState } from './state';
import { runRef, transitionRun, type RunRecord, type TransitionGuard } from '../store/runs';
import { ACTIVE_RUN_STATUSES, isTerminal, nowSeconds } from '../types';

/**
 * Expiry of runs: OpenAI's `expires_at` is a deadline; a run past it never reads as active.
 * Whoever meets such a run first (a read, the workflow, the reconciler) ends it.
 */

export const isPastExpiry = (record: RunRecord, nowS = nowSeconds()) => record.run.expires_at !== null && record.run.expires_at <= nowS;

/**
 * A run past its `expires_at` ends `expired` (or `cancelled`, if it was being cancelled),
 * its open steps closed and its thread released. The run as it stands afterwards; the run
 * unchanged when it is not past its expiry (or is terminal).
 */
export async function expireIfDue(record: RunRecord, state?: EngineState): Promise<RunRecord> {
  const now = nowSeconds();
  if (isTerminal(record.run.status) || !isPastExpiry(record, now)) return record;
  const status = record.run.status === 'cancelling' ? 'cancelled' : 'expired';
  const guard: TransitionGuard = { condition: '#expires_at <= :expiry_now', values: { ':expiry_now': now } };
  const ref = runRef(record);
  const usage = state?.usage ?? (await loadRunState(ref))?.state.usage;
  const done = await transitionRun(ref, ACTIVE_RUN_STATUSES, { status, ...(usage ? { usage } : {}) }, guard);
  if (!done) return (await loadRunState(ref))?.record ?? record;
  await closeOpenSteps(done, status, status === 'expired' ? 'run_expired' : 'run_cancelled');
  log.info('run expired', { run_id: record.run.id, status, expires_at: record.run.expires_at });
  return done;
}

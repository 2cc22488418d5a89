import { reconcileRuns, type ReconcileSummary } from '../assistants/workflow/recovery';

/**
 * Scheduled (EventBridge, every minute; the local runtime on its own timer): one pass of the
 * run reconciler over the active runs (assistants/workflow/recovery.ts). A run whose
 * executor is gone (a streamed run's lapsed lease, a workflow run whose execution is not
 * running) or that is past its `expires_at` reaches its terminal state and frees its thread.
 * The event itself carries nothing the pass needs.
 */
export async function handler(): Promise<ReconcileSummary> {
  return reconcileRuns();
}

import type { RunRecord } from './runs-store';
import type { Run, ToolOutput } from './types';

/**
 * Where the API hands runs to the asynchronous lifecycle (DESIGN.md §5). The routes
 * validate, write the record (queued / cancelling) and then call these hooks; the
 * lifecycle (SQS FIFO + Step Functions) is plugged in here. Until then they do nothing.
 * Tests (and the local runtime) can swap them with setLifecycleHooks. Streamed runs
 * (`stream: true`) do not go through these hooks: the engine (engine.ts) runs them inline.
 */
export interface LifecycleHooks {
  /** A run was written `queued` and holds its thread's claim: enqueue it. */
  startRun(record: RunRecord): Promise<void>;
  /**
   * Tool outputs for a run in `requires_action` (ids checked against required_action):
   * resume it. May return the run as it stands afterwards (the API returns that run).
   */
  submitToolOutputs(record: RunRecord, outputs: ToolOutput[]): Promise<Run | void>;
  /** A run moved to `cancelling`: stop it and finish it as `cancelled`. */
  cancelRun(record: RunRecord): Promise<void>;
}

const noop: LifecycleHooks = {
  startRun: async () => undefined,
  submitToolOutputs: async () => undefined,
  cancelRun: async () => undefined,
};

let hooks: LifecycleHooks = { ...noop };

/** Replace some hooks; returns a function that restores the previous ones. */
export function setLifecycleHooks(replacement: Partial<LifecycleHooks>): () => void {
  const previous = hooks;
  hooks = { ...hooks, ...replacement };
  return () => {
    hooks = previous;
  };
}

export const startRun = (record: RunRecord) => hooks.startRun(record);
export const submitToolOutputs = (record: RunRecord, outputs: ToolOutput[]) => hooks.submitToolOutputs(record, outputs);
export const cancelRun = (record: RunRecord) => hooks.cancelRun(record);

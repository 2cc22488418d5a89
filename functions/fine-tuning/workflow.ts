/**
 * The contract between the fine-tuning state machine (infra/workflows/fine-tuning.ts) and
 * its Lambda workers (functions/workers/fine-tune-*.ts). Kept here, below both, so the
 * definition and the code that answers it cannot drift apart.
 */

/** Execution input (the start consumer writes it; every task receives these two fields). */
export interface FineTuningExecutionInput {
  workspaceId: string;
  jobId: string;
}

export const FINE_TUNE_ACTIONS = ['validate', 'submit', 'poll', 'fail'] as const;
export type FineTuneAction = (typeof FINE_TUNE_ACTIONS)[number];

/** Event of the `fine-tune-step` task worker. */
export interface FineTuneStepEvent extends FineTuningExecutionInput {
  action: FineTuneAction;
  /** `fail` only: the caught task error (`{Error, Cause}` as Step Functions gives it). */
  error?: { Error?: string; Cause?: string };
}

/** What every action answers; the Choice states branch on `next`. */
export interface FineTuneStepResult {
  next: 'submit' | 'wait' | 'end';
  /** Seconds until the next poll (FINE_TUNING_POLL_SECONDS; the local runner caps waits). */
  waitSeconds?: number;
}

/** Error name for a provider that is unreachable, rate-limited or answering 5xx: retried. */
export const PROVIDER_UNAVAILABLE = 'ProviderUnavailable';

/** Message the API sends to the start queue for each new job. */
export interface StartJobMessage {
  workspaceId: string;
  jobId: string;
}

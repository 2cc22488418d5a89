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

export const FINE_TUNE_ACTIONS = ['validate', 'submit', 'poll', 'continue', 'fail'] as const;
export type FineTuneAction = (typeof FINE_TUNE_ACTIONS)[number];

/** Event of the `fine-tune-step` task worker. */
export interface FineTuneStepEvent extends FineTuningExecutionInput {
  action: FineTuneAction;
  /** `fail` only: the caught task error (`{Error, Cause}` as Step Functions gives it). */
  error?: { Error?: string; Cause?: string };
  /** `poll` only: the previous step's result, whose `polls` counts this execution's polls so far. */
  step?: { polls?: number };
  /** `continue` only: this execution's name (`$$.Execution.Name`), from which the next one's is made. */
  execution?: string;
}

/** What every action answers; the Choice states branch on `next`. */
export interface FineTuneStepResult {
  next: 'submit' | 'wait' | 'continue' | 'end';
  /** Seconds until the next poll (FINE_TUNING_POLL_SECONDS; the local runner caps waits). */
  waitSeconds?: number;
  /** Polls made by this execution so far (0 before the first). */
  polls?: number;
}

/**
 * Name of the execution that continues `name`: `<jobId>` -> `<jobId>--2` -> `<jobId>--3` ...
 * The name is the idempotency key of StartExecution, so a retried `continue` task starts
 * nothing twice. (Job ids are `ftjob-` and base-32, so `--` never occurs in one.)
 */
export function continuationName(name: string): string {
  const m = /^(.*)--(\d+)$/.exec(name);
  return m ? `${m[1]}--${Number(m[2]) + 1}` : `${name}--2`;
}

/** Error name for a provider that is unreachable, rate-limited or answering 5xx: retried. */
export const PROVIDER_UNAVAILABLE = 'ProviderUnavailable';

/**
 * Message to the start queue: the API sends one for each new job; the `continue` step sends
 * one naming the execution that takes over from the current one (see continuationName).
 */
export interface StartJobMessage {
  workspaceId: string;
  jobId: string;
  /** The execution's name; absent: the job id (the first execution). */
  execution?: string;
}

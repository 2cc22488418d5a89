/** The batch object of OpenAI's Batches API, and what the gateway stores beside it. */
import type { AuthContext } from '../shared/http/types';
import type { NativeJobRef } from './native/types';

export const BATCH_ENDPOINTS = ['/v1/chat/completions', '/v1/embeddings', '/v1/responses', '/v1/messages', '/v1/completions'] as const;
export type BatchEndpoint = (typeof BATCH_ENDPOINTS)[number];

export const BATCH_STATUSES = ['validating', 'failed', 'in_progress', 'finalizing', 'completed', 'expired', 'cancelling', 'cancelled'] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];

/** How a batch ends once its output is written: the status `finalizing` (or `cancelling`) leads to. */
export type BatchEnding = 'completed' | 'expired' | 'cancelled' | 'failed';

export const TERMINAL_STATUSES: readonly BatchStatus[] = ['failed', 'completed', 'expired', 'cancelled'];

export interface BatchError {
  code: string;
  message: string;
  param: string | null;
  line: number | null;
}

export interface BatchObject {
  id: string;
  object: 'batch';
  endpoint: BatchEndpoint;
  errors: { object: 'list'; data: BatchError[] } | null;
  input_file_id: string;
  completion_window: '24h';
  status: BatchStatus;
  output_file_id: string | null;
  error_file_id: string | null;
  created_at: number;
  in_progress_at: number | null;
  expires_at: number;
  finalizing_at: number | null;
  completed_at: number | null;
  failed_at: number | null;
  expired_at: number | null;
  cancelling_at: number | null;
  cancelled_at: number | null;
  request_counts: { total: number; completed: number; failed: number };
  metadata: Record<string, string> | null;
}

/**
 * The stored batch: the public object's fields, the caller it runs as, and the ids its output
 * files will take (chosen at creation, so a finalizer that runs twice writes the same files).
 */
export interface BatchRecord extends Omit<BatchObject, 'object' | 'request_counts' | 'errors'> {
  workspace_id: string;
  /** The creating key's context: every line runs as this caller (its configs, policies, budgets). */
  auth: AuthContext;
  /** The routing headers of the create request (`x-gateway-provider: @slug`, `x-gateway-config`, ...). */
  headers: Record<string, string>;
  total: number;
  completed: number;
  failed: number;
  batch_errors: BatchError[] | null;
  ending: BatchEnding | null;
  planned_output_file_id: string;
  planned_error_file_id: string;
  /** `native`: handed to the provider's own batch API (docs/batches.md); absent on batches made before native mode: `gateway`. */
  mode?: BatchMode;
  /** Native mode only: the provider job and what the lifecycle knows of it. */
  native?: NativeBatchState;
}

export const BATCH_MODES = ['gateway', 'native'] as const;
export type BatchMode = (typeof BATCH_MODES)[number];

/** What a native batch keeps between the steps of its lifecycle (functions/batches/native/lifecycle.ts). */
export interface NativeBatchState {
  /** The provider slug the batch was created on (`openai`, `anthropic`, ...). */
  provider: string;
  /** The provider's job, once submitted. */
  job: NativeJobRef | null;
  /** The provider's own status word at the last poll. */
  provider_status: string | null;
  /** Lines the provider has answered so far (its own counts), shown while the job runs. */
  provider_counts: { completed: number; failed: number } | null;
  /** Lines refused before the job (bad lines): error lines of the batch, counted in `failed`. */
  rejected: number;
  /** Set once the provider was asked to stop the job (a cancel, or the window passing). */
  stop_requested_at: number | null;
  /** Unix seconds of the last poll. */
  polled_at: number | null;
  /** Polls made; the next poll waits longer the more were made (capped). */
  polls: number;
}

export const BATCH_ID = /^batch_[0-9a-z]{26}$/;

export function toBatchObject(r: BatchRecord): BatchObject {
  return {
    id: r.id,
    object: 'batch',
    endpoint: r.endpoint,
    errors: r.batch_errors?.length ? { object: 'list', data: r.batch_errors } : null,
    input_file_id: r.input_file_id,
    completion_window: r.completion_window,
    status: r.status,
    output_file_id: r.output_file_id,
    error_file_id: r.error_file_id,
    created_at: r.created_at,
    in_progress_at: r.in_progress_at,
    expires_at: r.expires_at,
    finalizing_at: r.finalizing_at,
    completed_at: r.completed_at,
    failed_at: r.failed_at,
    expired_at: r.expired_at,
    cancelling_at: r.cancelling_at,
    cancelled_at: r.cancelled_at,
    request_counts: requestCounts(r),
    metadata: r.metadata,
  };
}

/**
 * The counts the API shows. A native batch's lines are recorded only once the provider's job
 * has ended, so while it runs the provider's own counts are shown (plus the lines refused
 * before the job); the recorded counts win as soon as they are larger.
 */
function requestCounts(r: BatchRecord): BatchObject['request_counts'] {
  const seen = r.native?.provider_counts;
  if (!seen) return { total: r.total, completed: r.completed, failed: r.failed };
  return { total: r.total, completed: Math.max(r.completed, seen.completed), failed: Math.max(r.failed, r.native!.rejected + seen.failed) };
}

/** One answered line: what the output or error file says for it. */
export interface LineResult {
  custom_id: string | null;
  /** The file line (1-based) of the request. */
  line: number;
  ok: boolean;
  /** The JSONL line of the output or error file, without its newline. */
  text: string;
}

/** Messages of the batch queue (FIFO, group = workspace: one chunk of a workspace at a time). */
export type BatchMessage =
  | { kind: 'validate'; workspaceId: string; batchId: string }
  | { kind: 'chunk'; workspaceId: string; batchId: string; chunk: number; start: number; end: number; firstLine: number; lastLine: number }
  | { kind: 'finalize'; workspaceId: string; batchId: string }
  /** Native mode (a standard queue, delayed): do the batch's next step (submit, poll, collect, finalize). */
  | { kind: 'native'; workspaceId: string; batchId: string };

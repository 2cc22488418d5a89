/**
 * Native batch mode (docs/batches.md): a batch handed to the provider's own batch API, at its
 * batch discount, instead of the gateway running every line itself. One NativeBatchAdapter
 * per provider batch API (OpenAI Batches, Anthropic Message Batches, Bedrock model
 * invocation jobs, Vertex AI batch prediction), listed in ./registry.ts.
 *
 * The framework (./lifecycle.ts) owns everything that is the same for every provider:
 * - reading the input file and checking each line as gateway mode does (functions/batches/
 *   input.ts: checkLine); a bad line is an error line and never reaches an adapter;
 * - `oneModelPerJob`: a line naming another model than the batch's first good line is an
 *   error line (`mismatched_model`);
 * - storing the NativeJobRef on the batch record, polling with backoff, the gateway's own
 *   window (24 h: past it the framework calls `cancel`, then collects what the job answered,
 *   and the batch ends `expired`), the caller's cancel (-> `cancel`);
 * - recording each answered line exactly once (the same conditional line items as gateway
 *   mode: a poll or a results read that runs twice, or a worker that dies, records nothing
 *   twice), writing the output and error files in OpenAI's format, and one request-log record
 *   per answered line (metadata `batch_id`, `batch_mode: native`), priced from the line's
 *   `usage` at the catalogue price of `provider`/`model` less `batchDiscount`.
 *
 * The adapter owns the provider's wire format and I/O: translating lines, uploading them,
 * creating, reading and cancelling the job, and reading its results back. Every provider
 * call goes through functions/shared/net/http-client.ts (sendUpstream: SSRF rules, timeouts)
 * with the provider's own auth (`provider.adapter.authHeaders(target)` / `sign`); ./http.ts
 * has helpers that do this and sort failures into the two errors of ./errors.ts:
 * - NativeBatchUnavailable (network, timeout, 408, 429, 5xx): transient. The framework
 *   tries the step again later with backoff, for as long as the batch's window lasts; a
 *   provider that is down while a job runs never fails the batch by itself.
 * - NativeBatchRejected (any other refusal, a missing setting): permanent. Thrown by
 *   `prepare`'s caller-facing checks it is an error line; thrown by `submit` it fails the
 *   batch with the message as `errors.data[0]` (code = its `code`); thrown by `poll`,
 *   `cancel` or `results` it fails the batch the same way, keeping the lines recorded so far.
 *
 * Every method may run more than once for the same batch (a redelivered queue message, a
 * worker that died after the provider answered): `submit` should be findable afterwards
 * (see `findJob`), `cancel` of a job that already ended must not throw, `results` must yield
 * the same lines each time it runs (the framework records each line once).
 */
import type { ProviderAdapter, ProviderTarget, Usage } from '../../providers/types';
import type { BatchEndpoint } from '../types';

/** The one provider a native batch runs on, resolved from the create request as any request is. */
export interface NativeProvider {
  /**
   * The data-plane adapter of the provider (functions/providers/<slug>): `baseUrl(target)`
   * (honours a custom host, so fakes work), `authHeaders(target)`, `sign` (Bedrock SigV4,
   * Vertex token), and the live path's translators (`chat.request` / `chat.response`,
   * `embeddings`), which adapters reuse so a batch line means what a live request means.
   */
  adapter: ProviderAdapter;
  /** Credentials and settings (a managed provider's stored settings merged in). Never stored. */
  target: ProviderTarget;
  /** The managed provider's slug (without `@`) when one was used; for logs. */
  managedProvider?: string;
}

/** What every adapter call receives. Resolved afresh for each step: nothing here is stored. */
export interface NativeBatchContext {
  workspaceId: string;
  /** The gateway's batch id (`batch_…`): name provider objects after it, keep it in provider metadata. */
  batchId: string;
  endpoint: BatchEndpoint;
  provider: NativeProvider;
  /** Aborted when the worker must stop; pass it to sendUpstream. */
  signal: AbortSignal;
}

/** One request line of the input file that passed the gateway's checks (input.ts: checkLine). */
export interface NativeRequestLine {
  /** File line, 1-based: the key the framework records the line's answer under. */
  line: number;
  /** The caller's `custom_id` (any non-empty string, unique within the batch). */
  customId: string;
  /** The request body as the caller wrote it for the batch's endpoint (`body.model` is a non-empty string, no `stream: true`). */
  body: Record<string, unknown>;
}

/** A line translated into the provider's batch record, or why this provider cannot take it. */
export type PreparedLine =
  | {
      ok: true;
      /** The model the provider will run (after the gateway's model mapping), for `oneModelPerJob` and for pricing. */
      model: string;
      /** The provider's record for this line, JSON-serialisable (e.g. OpenAI `{custom_id, method, url, body}`, Anthropic `{custom_id, params}`). */
      payload: Record<string, unknown>;
    }
  | {
      ok: false;
      /** Error-line code, e.g. `invalid_value`, `unsupported_parameter`. */
      code: string;
      /** Names the line: "Line 7 …". */
      message: string;
    };

/** A prepared line as `submit` receives it. */
export interface SubmitLine {
  line: number;
  customId: string;
  model: string;
  payload: Record<string, unknown>;
}

/**
 * The provider's job, as stored on the batch record (`native.job`) between steps. Small and
 * JSON-serialisable; never a credential.
 */
export interface NativeJobRef {
  /** The provider's job id: OpenAI `batch_…`, Anthropic `msgbatch_…`, a Bedrock job ARN, a Vertex job resource name. */
  id: string;
  /** Whatever else later steps need (an uploaded input file id, an S3 or GCS output prefix). */
  data?: Record<string, string>;
}

/**
 * The provider job's state in the gateway's words. `in_progress` while the provider works
 * (also queued / validating at the provider); `cancelling` after a cancel until the provider
 * stops; the four ends as OpenAI names them. After an end the framework calls `results`
 * once (again only if that run died) and writes the files, whatever the end: a `failed`,
 * `expired` or `cancelled` job may still have answered some lines.
 */
export type NativeJobStatus = 'in_progress' | 'cancelling' | 'completed' | 'failed' | 'expired' | 'cancelled';

export interface NativeJobState {
  status: NativeJobStatus;
  /** The provider's own status word (kept for diagnosis, logged). */
  providerStatus: string;
  /**
   * Lines the provider has answered so far, when it says (shown in the batch's
   * `request_counts` while it runs; `completed` = succeeded, `failed` = errored). The
   * counts after the end are the files' lines, not these.
   */
  counts?: { completed: number; failed: number };
  /** `failed` only: why, in the provider's words (the batch's `errors.data`). */
  errors?: Array<{ code: string; message: string }>;
  /** A reference with more in it than before (e.g. the output file ids OpenAI sets at the end); stored when given. */
  job?: NativeJobRef;
}

/**
 * One answered line, in OpenAI's batch output format. Exactly one of `response` and `error`:
 * - `response`: the provider answered (any status). `status_code` 2xx goes to the output
 *   file, anything else to the error file. `body` is in the batch endpoint's format: an
 *   OpenAI chat completion for `/v1/chat/completions` (translated from the provider's own
 *   format by the live path's translator), an Anthropic message for `/v1/messages`, an
 *   OpenAI error object for an error status.
 * - `error`: the provider could not run the line (`{code, message}`, e.g. a line of a job
 *   that was cancelled or expired before it ran: code `batch_cancelled` / `batch_expired`).
 */
export interface NativeLineResult {
  /** File line (see NativeResultsContext for how to find it from what the provider echoes back). */
  line: number;
  /** The provider's id for the line's result when it has one (OpenAI `batch_req_…`); absent: the gateway makes one. */
  id?: string;
  response: { status_code: number; request_id: string | null; body: unknown } | null;
  error: { code: string; message: string } | null;
  /** What the provider billed for the line (OpenAI usage shape), for spend; absent when it billed nothing. */
  usage?: Usage;
  /** The model that answered (the provider's name for it), for pricing; absent: the line's prepared model. */
  model?: string;
}

/** `results`'s context: the input's ids, so an adapter can find a line from what the provider echoes. */
export interface NativeResultsContext extends NativeBatchContext {
  /** The file line of a caller's `custom_id` (undefined: not a line of this batch). */
  lineOf(customId: string): number | undefined;
  /** The caller's `custom_id` of a file line. */
  customIdOf(line: number): string | undefined;
}

export interface NativeBatchAdapter {
  /** Human name for messages ("OpenAI Batches"). */
  name: string;
  /** Provider slugs (functions/providers/registry.ts) this adapter serves, e.g. `['openai']`. */
  providers: readonly string[];
  /** Batch endpoints it can run; another endpoint is a 400 `native_batch_unsupported` at create. */
  endpoints: readonly BatchEndpoint[];
  /** The provider's batch discount off its list price, as a fraction: 0.5 = half price. Applied by the framework to every line's cost. */
  batchDiscount: number;
  /** The provider's job runs one model (OpenAI, Bedrock, Vertex): other models' lines become `mismatched_model` error lines. */
  oneModelPerJob: boolean;
  /**
   * Translates one line (pure, no I/O): map the model as the live path does for this
   * provider, build the provider's record. Use `lineKey(line)` as the provider-side id when
   * the provider restricts ids (Anthropic `^[a-zA-Z0-9_-]{1,64}$`, Bedrock `recordId`), else
   * the caller's `customId`. Not ok: the line becomes an error line and is not sent.
   */
  prepare(ctx: NativeBatchContext, line: NativeRequestLine): PreparedLine;
  /**
   * Uploads the prepared lines (in file order; at least one) and creates the provider's job.
   * Returns once the provider has accepted the job. The gateway's batch id should be kept
   * with the job (provider metadata, job name) so `findJob` can find it again.
   */
  submit(ctx: NativeBatchContext, lines: AsyncIterable<SubmitLine>): Promise<NativeJobRef>;
  /**
   * The job an earlier `submit` for `ctx.batchId` created, if the provider can be asked
   * (by metadata or job name). Called before a `submit` that runs again after a worker died,
   * so a batch never creates two provider jobs. Absent: no such lookup; `submit` runs again.
   */
  findJob?(ctx: NativeBatchContext): Promise<NativeJobRef | undefined>;
  /** Reads the job's state once. */
  poll(ctx: NativeBatchContext, job: NativeJobRef): Promise<NativeJobState>;
  /** Asks the provider to stop the job (the lines it already answered are kept). A job that has ended already is not an error. */
  cancel(ctx: NativeBatchContext, job: NativeJobRef): Promise<void>;
  /**
   * The job's answered lines once it has ended, streamed (never all in memory): each input
   * line at most once; lines the provider never answered may be left out (the framework
   * leaves them out of the files too) or yielded as `error` lines.
   */
  results(ctx: NativeResultsContext, job: NativeJobRef): AsyncIterable<NativeLineResult>;
}

/** A provider-side id for a file line that fits every provider's id rules: `L` and ten digits (`L0000000042`). */
export const lineKey = (line: number): string => `L${String(line).padStart(10, '0')}`;

/** The file line of a `lineKey`, or undefined when `key` is not one. */
export function lineOfKey(key: string): number | undefined {
  const m = /^L(\d{10})$/.exec(key);
  return m ? Number(m[1]) : undefined;
}

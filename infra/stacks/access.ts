import type { TableName } from '../../functions/shared/tables';

/**
 * Least privilege, in one place: which tables each endpoint-group function may touch and
 * how, and what it may do with the provider-credentials KMS key. The API stack turns this
 * map into IAM statements on exact table and index ARNs; the infra tests check the
 * synthesized policies against it. A function that needs more gets it here, on purpose.
 */
export type TableAccess = 'read' | 'readWrite';

/**
 * Use of the provider-credentials key (functions/shared/crypto/envelope.ts):
 * - `none`: never touches managed-provider credentials;
 * - `read`: resolves managed providers (`@slug`, virtual keys) to call a model (Decrypt);
 * - `readWrite`: also stores them (a fresh data key per secret: GenerateDataKey).
 * kms:Encrypt is not granted: envelope encryption never sends plaintext to KMS.
 */
export type CredentialsAccess = 'none' | 'read' | 'readWrite';

export interface FunctionAccess {
  tables: Partial<Record<TableName, TableAccess>>;
  providerCredentials: CredentialsAccess;
  /** Objects of the Files API's bucket (and its KMS key): read, write, tag, delete. */
  filesBucket?: 'readWrite';
}

export const FILES_OBJECT_ACTIONS = ['s3:GetObject', 's3:PutObject', 's3:PutObjectTagging', 's3:DeleteObject', 's3:AbortMultipartUpload'] as const;
/** SSE-KMS: writing needs a data key, reading its decryption. */
export const FILES_KEY_ACTIONS = ['kms:Decrypt', 'kms:GenerateDataKey'] as const;

/**
 * What the inference pipeline (functions/gateway) needs wherever it runs: it authenticates
 * keys and loads configs and managed providers (control), enforces rate-limit policies
 * (policies, counters in usage), evaluates guardrails, serves and fills the cache, and
 * writes the request log.
 */
export const PIPELINE_TABLES: Partial<Record<TableName, TableAccess>> = {
  control: 'read',
  policies: 'read',
  guardrails: 'read',
  usage: 'readWrite',
  cache: 'readWrite',
  logs: 'readWrite',
};

/** Every endpoint group has POSTs that create objects or call a model: each honours `Idempotency-Key` (table idempotency). */
export const FUNCTION_ACCESS: Readonly<Record<string, FunctionAccess>> = {
  // Workspaces, API keys, managed providers (stores credentials), configs; reads the request
  // log (GET /v1/logs) and the spend counters (GET /v1/analytics/spend). It never writes a
  // log record or a counter: the pipeline does.
  admin: { tables: { control: 'readWrite', logs: 'read', usage: 'read', idempotency: 'readWrite' }, providerCredentials: 'readWrite' },
  gateway: { tables: { ...PIPELINE_TABLES, idempotency: 'readWrite' }, providerCredentials: 'read' },
  // Templates and versions; `/prompts/{id}/completions` calls a model through the pipeline.
  prompts: { tables: { ...PIPELINE_TABLES, prompts: 'readWrite', idempotency: 'readWrite' }, providerCredentials: 'read' },
  // Assistants live in the control table; threads, messages and runs in threads;
  // streamed runs call the model through the pipeline inline. Its runs-workflow permissions
  // (send to the runs queue, stop an execution, answer a task token) come from the registry.
  assistants: {
    tables: { ...PIPELINE_TABLES, control: 'readWrite', threads: 'readWrite', idempotency: 'readWrite' },
    providerCredentials: 'read',
  },
  // Jobs are created, listed and cancelled here (the provider is called by the workflow's
  // workers, WORKER_ACCESS); fine-tuning paths the gateway does not implement, and requests
  // with a raw provider key, go through the generic proxy (the pipeline, without guardrails,
  // which run on chat and completions only).
  'fine-tuning': {
    tables: { control: 'read', policies: 'read', usage: 'readWrite', cache: 'readWrite', logs: 'readWrite', jobs: 'readWrite', idempotency: 'readWrite' },
    providerCredentials: 'read',
    // A job on a file of the gateway's Files API reads its bytes to copy them to the provider.
    filesBucket: 'readWrite',
  },
  // File metadata lives in the jobs table (FILE# items), the bytes in the data stack's files
  // bucket (granted by the API stack). A raw provider key and paths the group lacks go through
  // the generic proxy to the provider's own Files API, as on fine-tuning. The idempotency
  // table serves `POST /v1/uploads` (a multipart `POST /v1/files` body never matches the
  // raw-body fingerprint; an upload part keeps its key in the jobs table; docs/files.md).
  files: {
    tables: { control: 'read', policies: 'read', usage: 'readWrite', cache: 'readWrite', logs: 'readWrite', jobs: 'readWrite', idempotency: 'readWrite' },
    providerCredentials: 'read',
    filesBucket: 'readWrite',
  },
  // Batches are created, read and cancelled here (the batch-run worker runs their lines);
  // the input file's record is read from jobs. A Message Batch's requests are written to the
  // files bucket as its input file, its results read from it, and both deleted with it. A raw
  // provider key and paths the group lacks go through the generic proxy to the provider's own
  // Batches API.
  batches: {
    tables: { control: 'read', policies: 'read', usage: 'readWrite', cache: 'readWrite', logs: 'readWrite', jobs: 'readWrite', idempotency: 'readWrite' },
    providerCredentials: 'read',
    filesBucket: 'readWrite',
  },
  // Rerank is a model call through the pipeline (keys, policies, cache, request log), but it
  // evaluates no guardrails (those run on chat and completions), so no guardrails table.
  rerank: {
    tables: { control: 'read', policies: 'read', usage: 'readWrite', cache: 'readWrite', logs: 'readWrite', idempotency: 'readWrite' },
    providerCredentials: 'read',
  },
  // CRUD on policy documents only; they never call a provider.
  guardrails: { tables: { control: 'read', guardrails: 'readWrite', idempotency: 'readWrite' }, providerCredentials: 'none' },
  policies: { tables: { control: 'read', policies: 'readWrite', idempotency: 'readWrite' }, providerCredentials: 'none' },
  // MCP servers live in the control table; their header values and OAuth client secrets
  // are sealed with the provider-credentials key (encrypt on write, decrypt to call them).
  // Tool calls are governed like model requests: rate-limit policies (counters in usage),
  // guardrails, and a request-log record each (functions/mcp/governed-call.ts). Sessions of
  // /v1/mcp (Mcp-Session-Id) live in the sessions table.
  mcp: {
    tables: {
      control: 'readWrite',
      policies: 'read',
      guardrails: 'read',
      usage: 'readWrite',
      logs: 'readWrite',
      idempotency: 'readWrite',
      sessions: 'readWrite',
    },
    providerCredentials: 'readWrite',
  },
};

/** Item-level actions only: no Scan, no table management, no streams. */
export const DYNAMODB_READ_ACTIONS = ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query', 'dynamodb:ConditionCheckItem'] as const;
export const DYNAMODB_WRITE_ACTIONS = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem'] as const;

export const KMS_ACTIONS: Record<CredentialsAccess, readonly string[]> = {
  none: [],
  read: ['kms:Decrypt'],
  readWrite: ['kms:Decrypt', 'kms:GenerateDataKey'],
};

/**
 * The workflow workers (infra/workflows/registry.ts), by worker name. Their Step Functions,
 * SQS and EventBridge permissions come from the registry (who starts, stops, answers,
 * produces); these are their table and key uses.
 */
export const WORKER_ACCESS: Readonly<Record<string, FunctionAccess>> = {
  // Reads the job and its managed provider (Decrypt to call the provider), writes the job's
  // transitions and events.
  'fine-tune-step': { tables: { control: 'read', jobs: 'readWrite' }, providerCredentials: 'read' },
  // Reads the job (a cancelled one is not started) and starts its execution.
  'fine-tune-start': { tables: { jobs: 'read' }, providerCredentials: 'none' },
  // Fails a job whose execution ended without a terminal state.
  'fine-tune-finalize': { tables: { jobs: 'readWrite' }, providerCredentials: 'none' },
  // A run's model step calls the model through the inference pipeline (its tables, Decrypt
  // of the run's managed provider) and writes the run, its steps and messages (threads).
  'run-step': { tables: { ...PIPELINE_TABLES, threads: 'readWrite' }, providerCredentials: 'read' },
  // Reads the run (an ended one is not started) and starts its execution.
  'run-start': { tables: { threads: 'read' }, providerCredentials: 'none' },
  // Cancels or fails a run (its steps and open message, the thread's claim) when its
  // execution ended without finishing it.
  'run-finalize': { tables: { threads: 'readWrite' }, providerCredentials: 'none' },
  // Reads the active-runs index and the runs, ends those no executor holds (their steps,
  // open message and the thread's claim). Its DescribeExecution grant comes from the registry.
  'run-reconcile': { tables: { threads: 'readWrite' }, providerCredentials: 'none' },
  // Runs each batch line through the inference pipeline (its tables, Decrypt of managed
  // providers), records the answers and the batch (jobs), reads the input file and writes
  // the output files (the files bucket). Idempotency: the Messages route it runs composes that
  // middleware (a line carries no Idempotency-Key, so it is not used, but the bundle holds it).
  'batch-run': { tables: { ...PIPELINE_TABLES, jobs: 'readWrite', idempotency: 'readWrite' }, providerCredentials: 'read', filesBucket: 'readWrite' },
  // Writes request-log records whose write kept failing and adds their spend to the counters.
  'log-redrive': { tables: { logs: 'readWrite', usage: 'readWrite' }, providerCredentials: 'none' },
  // The deploy-time custom resource of the bootstrap stack (functions/workers/bootstrap-admin.ts):
  // creates the organisation, the default workspace and the admin key's hash. Its only other
  // permission is secretsmanager:GetSecretValue on the one secret that holds that key.
  'bootstrap-admin': { tables: { control: 'readWrite' }, providerCredentials: 'none' },
};

export function workerAccessFor(worker: string): FunctionAccess {
  const access = WORKER_ACCESS[worker];
  if (!access) throw new Error(`infra/stacks/access.ts has no WORKER_ACCESS entry for worker '${worker}'.`);
  return access;
}

export function accessFor(group: string): FunctionAccess {
  const access = FUNCTION_ACCESS[group];
  if (!access) throw new Error(`infra/stacks/access.ts has no entry for endpoint group '${group}'.`);
  return access;
}

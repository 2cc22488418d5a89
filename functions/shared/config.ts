import * as z from 'zod/mini';
import type { AwsCredentials } from './aws/sigv4';
import { TABLE_NAMES, tableEnvVar, type TableName } from './tables';

/**
 * The one place that reads process.env. Parsed once, on first use, which
 * in Lambda is container start-up and locally happens after the runtime has set the env.
 */
const intFromEnv = (fallback: number, min = 0) =>
  z.pipe(
    z.optional(z.string()),
    z.transform((v) => {
      const n = v === undefined || v === '' ? fallback : Number(v);
      if (!Number.isInteger(n) || n < min) throw new Error(`expected an integer >= ${min}, got '${v}'`);
      return n;
    }),
  );

const numberFromEnv = (fallback: number) =>
  z.pipe(
    z.optional(z.string()),
    z.transform((v) => {
      const n = v === undefined || v === '' ? fallback : Number(v);
      if (!Number.isFinite(n) || n <= 0) throw new Error(`expected a number > 0, got '${v}'`);
      return n;
    }),
  );

/** A comma-separated list, lower-cased; `unset` when the variable is absent (set but empty: none). */
const listFromEnvOr = (unset: string) =>
  z.pipe(
    z.optional(z.string()),
    z.transform((v) =>
      (v ?? unset)
        .split(',')
        .map((s) => s.trim().toLowerCase())
        .filter(Boolean),
    ),
  );
const listFromEnv = listFromEnvOr('');

/** `64` or `128,64`: whole numbers from 1 to 1,000, the first the one in use; 64 when unset. */
const shardCountsFromEnv = z.pipe(
  z.optional(z.string()),
  z.transform((v) => {
    const counts = (v || '64').split(',').map((s) => Number(s.trim()));
    if (counts.some((n) => !Number.isInteger(n) || n < 1 || n > 1000)) throw new Error(`expected shard counts from 1 to 1000 separated by commas, got '${v}'`);
    return counts;
  }),
);

const TRUTHY = new Set(['1', 'y', 'yes', 't', 'true', 'on']);
const FALSY = new Set(['0', 'n', 'no', 'f', 'false', 'off']);
/**
 * Powertools' boolean settings (`getBooleanFromEnv` with extended parsing): unset is
 * undefined; a value it does not know is an error when `strict`, else false (its dev-mode rule).
 */
const flagFromEnv = (strict: boolean) =>
  z.pipe(
    z.optional(z.string()),
    z.transform((v) => {
      if (v === undefined) return undefined;
      const s = v.trim().toLowerCase();
      if (TRUTHY.has(s) || FALSY.has(s)) return TRUTHY.has(s);
      if (strict) throw new Error(`expected a boolean (true/false, 1/0, yes/no, on/off), got '${v}'`);
      return false;
    }),
  );

/** Unset and empty mean the same: no override. */
const urlFromEnv = z.pipe(
  z.optional(z.string()),
  z.transform((v) => (v ? v : undefined)),
);

const schema = z.object({
  AWS_REGION: z._default(z.string(), 'us-east-1'),
  /** Endpoint overrides, as the AWS SDKs read them (the local runtime and tests set them). */
  AWS_ENDPOINT_URL: urlFromEnv,
  AWS_ENDPOINT_URL_DYNAMODB: urlFromEnv,
  AWS_ENDPOINT_URL_KMS: urlFromEnv,
  AWS_ENDPOINT_URL_SECRETS_MANAGER: urlFromEnv,
  AWS_ENDPOINT_URL_SQS: urlFromEnv,
  /** KMS key (id, ARN or alias) that wraps the data keys of provider credentials. */
  PROVIDER_CREDENTIALS_KEY_ID: z._default(z.string(), 'alias/ai-gateway-provider-credentials'),
  GATEWAY_TRUSTED_HOSTS: listFromEnv,
  /** Origins whose pages may call the API (functions/shared/http/cors.ts): `*`, a list, or empty for none. */
  CORS_ALLOWED_ORIGINS: listFromEnvOr('*'),
  /** How long a verified gateway key stays cached; revocation takes effect within it. */
  AUTH_CACHE_TTL_MS: intFromEnv(30_000),
  /** How long a console session (its `gw_console` cookie) lasts: docs/console-sso.md. */
  CONSOLE_SESSION_TTL_SECONDS: intFromEnv(8 * 3600, 1),
  /** Console single sign-on by OpenID Connect (docs/console-sso.md); unset issuer: off. */
  SSO_ISSUER_URL: urlFromEnv,
  SSO_CLIENT_ID: z.optional(z.string()),
  SSO_CLIENT_SECRET: z.optional(z.string()),
  /** Secrets Manager secret holding the client secret, read once per container when SSO_CLIENT_SECRET is unset (on AWS). */
  SSO_CLIENT_SECRET_ARN: z.optional(z.string()),
  SSO_REDIRECT_URL: urlFromEnv,
  SSO_ROLE_CLAIM: z._default(z.string(), 'groups'),
  SSO_ROLE_MAP: z._default(z.string(), '{}'),
  SSO_SCOPES: z._default(z.string(), 'openid email profile'),
  SSO_LABEL: z.optional(z.string()),
  /** How long managed providers and saved configs stay cached in a container. */
  CONTROL_CACHE_TTL_MS: intFromEnv(30_000),
  /** How long rate-limit policy lists stay cached (at most 10 s, issue «Rate limits»). */
  POLICY_CACHE_TTL_MS: intFromEnv(10_000),
  /**
   * How far ahead of its own recent traffic a container reserves rate-limit units
   * (functions/policies/reservations.ts); 0 reserves only for requests already waiting.
   */
  RATE_LIMIT_RESERVE_AHEAD_MS: intFromEnv(50),
  /**
   * Sharded counters (functions/policies/shards.ts): the shards of a spend counter, and the
   * most a limit is split into. 32 keeps one counter at 10,000 req/s to about 313 writes a
   * second per item (DynamoDB's per-item limit is 1,000; the goal half of it).
   */
  COUNTER_SHARDS: intFromEnv(32, 1),
  /** Least requests (or tool calls) of a window per shard: a smaller limit is one counter. */
  RATE_LIMIT_SHARD_MIN: intFromEnv(500, 1),
  /** Least tokens of a window per shard of a tokens policy. */
  TOKENS_SHARD_MIN: intFromEnv(100_000, 1),
  /** Least USD of a period per shard of a budget. */
  BUDGET_SHARD_MIN_USD: numberFromEnv(10),
  /**
   * How long a container admits under a budget on the spend it last learned of a shard (its
   * read, or its own charge's new total) while that is under half the shard's slice, without
   * a read before the provider (functions/policies/budget-check.ts); 0 reads every time.
   */
  BUDGET_READ_AHEAD_MS: intFromEnv(1000, 0),
  /**
   * The same for tokens policies: how long the tokens a container last learned of a window's
   * counter stand in for a read while under half its slice (functions/policies/limiter.ts).
   */
  TOKENS_READ_AHEAD_MS: intFromEnv(1000, 0),
  REQUEST_LOG_TTL_DAYS: intFromEnv(30, 1),
  /** How long hourly spend counters are kept after their hour (functions/spend): a year of reports and a month's margin. */
  SPEND_RETENTION_DAYS: intFromEnv(400, 1),
  /** How long a request-log record waits for others to share its write (0: at once). */
  REQUEST_LOG_BATCH_WAIT_MS: intFromEnv(0, 0),
  /** Folder of the request-log write-ahead journal (shared/db/put-journal.ts); unset: none (AWS). */
  REQUEST_LOG_JOURNAL_DIR: z.optional(z.string()),
  /**
   * Write shards of a workspace's request log and of each of its indexes (functions/shared/db/log-keys.ts):
   * the count records are written with, then any counts used before (still read), e.g. `64` or `128,64`.
   */
  REQUEST_LOG_SHARDS: shardCountsFromEnv,
  /** How long a throttled request-log write is retried before the record goes to the dead-letter queue. */
  REQUEST_LOG_RETRY_MS: intFromEnv(5_000, 0),
  /** The queue request-log records go to when their write keeps failing (its consumer writes them later). */
  LOG_RECORDS_QUEUE_URL: z.optional(z.string()),
  /** How long a stored Responses API object (`store: true`) is kept for `previous_response_id`. */
  RESPONSES_TTL_DAYS: intFromEnv(30, 1),
  MAX_BODY_BYTES: intFromEnv(10 * 1024 * 1024, 1),
  /** Largest SSE line or event the gateway reads from a provider stream; past it the stream ends with `upstream_event_too_large`. */
  MAX_STREAM_EVENT_BYTES: intFromEnv(8 * 1024 * 1024, 1024),
  /** Upper bound on any upstream call when the caller sets no timeout. */
  DEFAULT_UPSTREAM_TIMEOUT_MS: intFromEnv(600_000, 1),
  /**
   * How long a request's claim on its Idempotency-Key holds without renewal (renewed every
   * third of it while the request runs): a crashed request frees its key after this.
   */
  IDEMPOTENCY_LEASE_MS: intFromEnv(10_000, 500),
  /** Longest silence allowed between body bytes of an upstream response, once its headers arrived. */
  UPSTREAM_IDLE_TIMEOUT_MS: intFromEnv(300_000, 1),
  RUN_QUEUE_URL: z.optional(z.string()),
  RUN_STATE_MACHINE_ARN: z.optional(z.string()),
  /**
   * How long a non-streamed run waits in requires_action for its tool outputs before it
   * expires (OpenAI: 10 minutes). Read when the runs state machine is built (its
   * WaitForToolOutputs TimeoutSeconds, infra/workflows/runs.ts): at synth in CDK, at
   * start-up locally; the wait sets the run's expires_at from the same number.
   */
  RUN_TOOL_OUTPUT_TIMEOUT_SECONDS: intFromEnv(600, 1),
  /**
   * How long a streamed run's executor (the request running it inline) holds its run without
   * renewing the lease (renewed every second while it calls the model): once it lapses, the
   * process is taken for gone and the run reconciler ends the run (workflow/recovery.ts).
   */
  RUN_EXECUTOR_LEASE_MS: intFromEnv(10_000, 2_000),
  FINE_TUNING_STATE_MACHINE_ARN: z.optional(z.string()),
  FINE_TUNING_POLL_SECONDS: intFromEnv(60, 1),
  /**
   * Polls one fine-tuning execution makes before a new execution takes over: a poll costs
   * about 9 history events (Wait, Task, Choice), so 1,500 stay well under Step Functions'
   * 25,000-event history limit even with retries (infra/workflows/fine-tuning.ts).
   */
  FINE_TUNING_POLLS_PER_EXECUTION: intFromEnv(1500, 1),
  /** Queue of new fine-tuning jobs; its consumer starts one execution per job. */
  FINE_TUNING_QUEUE_URL: z.optional(z.string()),
  /** Queue of batch work (validate, chunks of lines, finalize); docs/batches.md. */
  BATCH_QUEUE_URL: z.optional(z.string()),
  /** A batch's completion window (`completion_window: "24h"`), in ms; shorter for tests. */
  GATEWAY_BATCH_WINDOW_MS: intFromEnv(86_400_000, 1_000),
  /** Lines of one chunk in flight at once: a workspace runs one chunk at a time, so this bounds a batch and a workspace. */
  GATEWAY_BATCH_CONCURRENCY: intFromEnv(8, 1),
  /** Queue of native batch steps (standard, delayed messages: submit, poll the provider's job, collect its results). */
  BATCH_NATIVE_QUEUE_URL: z.optional(z.string()),
  /** Native batches: seconds before the first poll of a provider's job; later polls wait longer, up to the max (SQS delays stop at 900). */
  GATEWAY_BATCH_POLL_SECONDS: intFromEnv(30, 0),
  GATEWAY_BATCH_POLL_MAX_SECONDS: intFromEnv(300, 0),
  /**
   * Per-budget CloudWatch alarms (stack option `budgetAlarm`): the topic they notify, the
   * prefix of their names (the function may manage only alarms with it) and, for tests, the
   * CloudWatch endpoint. Unset topic: no alarms are managed.
   */
  BUDGET_ALARM_TOPIC_ARN: z.optional(z.string()),
  BUDGET_ALARM_PREFIX: z._default(z.string(), 'ai-gateway-budget-'),
  AWS_ENDPOINT_URL_CLOUDWATCH: urlFromEnv,
  SERVICE_NAME: z._default(z.string(), 'ai-gateway'),
  /** Powertools' settings the gateway's own EMF lines follow (functions/shared/telemetry/metrics.ts). */
  POWERTOOLS_METRICS_NAMESPACE: z._default(z.string(), 'AiGateway'),
  POWERTOOLS_METRICS_DISABLED: flagFromEnv(true),
  POWERTOOLS_DEV: flagFromEnv(false),
});

/** Console single sign-on (functions/console/sso); `roleMap` is JSON, parsed and checked there. */
export interface SsoSettings {
  issuerUrl: string | undefined;
  clientId: string | undefined;
  clientSecret: string | undefined;
  clientSecretArn: string | undefined;
  redirectUrl: string | undefined;
  roleClaim: string;
  roleMap: string;
  scopes: string;
  label: string | undefined;
}

export interface GatewayConfig {
  region: string;
  budgetAlarms: { topicArn: string | undefined; namePrefix: string; endpoint: string | undefined };
  /** Endpoint of a service when set in the environment; otherwise the regional one is used. */
  awsEndpoints: { dynamodb: string | undefined; kms: string | undefined; secretsManager: string | undefined; sqs: string | undefined };
  tables: Record<TableName, string>;
  providerCredentialsKeyId: string;
  trustedHosts: readonly string[];
  corsAllowedOrigins: readonly string[];
  authCacheTtlMs: number;
  consoleSessionTtlSeconds: number;
  sso: SsoSettings;
  controlCacheTtlMs: number;
  policyCacheTtlMs: number;
  rateLimitReserveAheadMs: number;
  counterShards: number;
  rateLimitShardMin: number;
  tokensShardMin: number;
  budgetShardMinUsd: number;
  budgetReadAheadMs: number;
  tokensReadAheadMs: number;
  requestLogTtlDays: number;
  spendRetentionDays: number;
  requestLogBatchWaitMs: number;
  requestLogJournalDir: string | undefined;
  responsesTtlDays: number;
  maxBodyBytes: number;
  maxStreamEventBytes: number;
  defaultUpstreamTimeoutMs: number;
  idempotencyLeaseMs: number;
  upstreamIdleTimeoutMs: number;
  runQueueUrl: string | undefined;
  runStateMachineArn: string | undefined;
  runToolOutputTimeoutSeconds: number;
  runExecutorLeaseMs: number;
  fineTuningStateMachineArn: string | undefined;
  fineTuningPollSeconds: number;
  fineTuningPollsPerExecution: number;
  fineTuningQueueUrl: string | undefined;
  batchQueueUrl: string | undefined;
  /** Request-log write shards: the count in use first, then earlier counts whose partitions are still read. */
  requestLogShards: number[];
  requestLogRetryMs: number;
  logRecordsQueueUrl: string | undefined;
  batchWindowMs: number;
  batchConcurrency: number;
  batchNativeQueueUrl: string | undefined;
  batchPollSeconds: number;
  batchPollMaxSeconds: number;
  serviceName: string;
  /** CloudWatch namespace of the per-request EMF metrics. */
  metricsNamespace: string;
  /** Powertools' rule: POWERTOOLS_METRICS_DISABLED when set, else off in dev mode (POWERTOOLS_DEV). */
  metricsEnabled: boolean;
}

export function parseConfig(env: Record<string, string | undefined>): GatewayConfig {
  const result = schema.safeParse(env);
  if (!result.success) {
    const problems = result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`Invalid gateway configuration: ${problems}`);
  }
  const e = result.data;
  const tables = Object.fromEntries(TABLE_NAMES.map((t) => [t, env[tableEnvVar(t)] ?? `ai-gateway-${t}`])) as Record<TableName, string>;
  return {
    region: e.AWS_REGION,
    awsEndpoints: {
      dynamodb: e.AWS_ENDPOINT_URL_DYNAMODB ?? e.AWS_ENDPOINT_URL,
      kms: e.AWS_ENDPOINT_URL_KMS ?? e.AWS_ENDPOINT_URL,
      secretsManager: e.AWS_ENDPOINT_URL_SECRETS_MANAGER ?? e.AWS_ENDPOINT_URL,
      sqs: e.AWS_ENDPOINT_URL_SQS ?? e.AWS_ENDPOINT_URL,
    },
    tables,
    budgetAlarms: {
      topicArn: e.BUDGET_ALARM_TOPIC_ARN || undefined,
      namePrefix: e.BUDGET_ALARM_PREFIX,
      endpoint: e.AWS_ENDPOINT_URL_CLOUDWATCH ?? e.AWS_ENDPOINT_URL,
    },
    providerCredentialsKeyId: e.PROVIDER_CREDENTIALS_KEY_ID,
    trustedHosts: e.GATEWAY_TRUSTED_HOSTS,
    corsAllowedOrigins: e.CORS_ALLOWED_ORIGINS,
    authCacheTtlMs: e.AUTH_CACHE_TTL_MS,
    consoleSessionTtlSeconds: e.CONSOLE_SESSION_TTL_SECONDS,
    sso: {
      issuerUrl: e.SSO_ISSUER_URL,
      clientId: e.SSO_CLIENT_ID || undefined,
      clientSecret: e.SSO_CLIENT_SECRET || undefined,
      clientSecretArn: e.SSO_CLIENT_SECRET_ARN || undefined,
      redirectUrl: e.SSO_REDIRECT_URL,
      roleClaim: e.SSO_ROLE_CLAIM,
      roleMap: e.SSO_ROLE_MAP,
      scopes: e.SSO_SCOPES,
      label: e.SSO_LABEL || undefined,
    },
    controlCacheTtlMs: e.CONTROL_CACHE_TTL_MS,
    policyCacheTtlMs: Math.min(e.POLICY_CACHE_TTL_MS, 10_000),
    rateLimitReserveAheadMs: e.RATE_LIMIT_RESERVE_AHEAD_MS,
    counterShards: Math.min(e.COUNTER_SHARDS, MAX_COUNTER_SHARDS),
    rateLimitShardMin: e.RATE_LIMIT_SHARD_MIN,
    tokensShardMin: e.TOKENS_SHARD_MIN,
    budgetShardMinUsd: e.BUDGET_SHARD_MIN_USD,
    budgetReadAheadMs: e.BUDGET_READ_AHEAD_MS,
    tokensReadAheadMs: e.TOKENS_READ_AHEAD_MS,
    requestLogTtlDays: e.REQUEST_LOG_TTL_DAYS,
    spendRetentionDays: e.SPEND_RETENTION_DAYS,
    requestLogBatchWaitMs: e.REQUEST_LOG_BATCH_WAIT_MS,
    requestLogJournalDir: e.REQUEST_LOG_JOURNAL_DIR || undefined,
    requestLogShards: e.REQUEST_LOG_SHARDS,
    requestLogRetryMs: e.REQUEST_LOG_RETRY_MS,
    logRecordsQueueUrl: e.LOG_RECORDS_QUEUE_URL,
    responsesTtlDays: e.RESPONSES_TTL_DAYS,
    maxBodyBytes: e.MAX_BODY_BYTES,
    maxStreamEventBytes: e.MAX_STREAM_EVENT_BYTES,
    defaultUpstreamTimeoutMs: e.DEFAULT_UPSTREAM_TIMEOUT_MS,
    idempotencyLeaseMs: e.IDEMPOTENCY_LEASE_MS,
    upstreamIdleTimeoutMs: e.UPSTREAM_IDLE_TIMEOUT_MS,
    runQueueUrl: e.RUN_QUEUE_URL,
    runStateMachineArn: e.RUN_STATE_MACHINE_ARN,
    runToolOutputTimeoutSeconds: e.RUN_TOOL_OUTPUT_TIMEOUT_SECONDS,
    runExecutorLeaseMs: e.RUN_EXECUTOR_LEASE_MS,
    fineTuningStateMachineArn: e.FINE_TUNING_STATE_MACHINE_ARN,
    fineTuningPollSeconds: e.FINE_TUNING_POLL_SECONDS,
    fineTuningPollsPerExecution: e.FINE_TUNING_POLLS_PER_EXECUTION,
    fineTuningQueueUrl: e.FINE_TUNING_QUEUE_URL,
    batchQueueUrl: e.BATCH_QUEUE_URL,
    batchWindowMs: e.GATEWAY_BATCH_WINDOW_MS,
    batchConcurrency: e.GATEWAY_BATCH_CONCURRENCY,
    batchNativeQueueUrl: e.BATCH_NATIVE_QUEUE_URL,
    batchPollSeconds: e.GATEWAY_BATCH_POLL_SECONDS,
    batchPollMaxSeconds: Math.min(e.GATEWAY_BATCH_POLL_MAX_SECONDS, 900),
    serviceName: e.SERVICE_NAME,
    metricsNamespace: e.POWERTOOLS_METRICS_NAMESPACE,
    metricsEnabled: !(e.POWERTOOLS_METRICS_DISABLED ?? e.POWERTOOLS_DEV ?? false),
  };
}

/** A spend report reads every shard of every counter partition: past this, reports get slow for no write relief anyone needs. */
const MAX_COUNTER_SHARDS = 256;

let loaded: GatewayConfig | undefined;

export function config(): GatewayConfig {
  loaded ??= parseConfig(process.env);
  return loaded;
}

/**
 * The function's own AWS credentials, which the Lambda runtime always puts in the
 * environment. Read on every call (three env lookups) rather than kept in GatewayConfig, so
 * the secret key never sits in an object that might be logged.
 */
export function awsEnvCredentials(env: Record<string, string | undefined> = process.env): AwsCredentials {
  const { AWS_ACCESS_KEY_ID: accessKeyId, AWS_SECRET_ACCESS_KEY: secretAccessKey, AWS_SESSION_TOKEN: sessionToken } = env;
  if (!accessKeyId || !secretAccessKey) {
    throw new Error('No AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set (the Lambda runtime sets them).');
  }
  return sessionToken ? { accessKeyId, secretAccessKey, sessionToken } : { accessKeyId, secretAccessKey };
}

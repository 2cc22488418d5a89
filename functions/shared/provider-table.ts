/**
 * The provider table: every provider slug, and every per-provider setting in one table: the config leaf fields, the `x-gateway-*`
 * headers, where each lands in a ProviderTarget, how a managed provider stores it and the
 * pattern an adapter checks it against. Everything that lists settings derives from here
 * (config schema, header parsing, toTarget, managed-provider storage and admin API, the
 * headers refused for deferred work). Plain data, no imports: shared/ and every bundle
 * may load it without pulling in adapter code.
 */

/**
 * Every provider the gateway speaks to. The registry (functions/providers/registry.ts) is a
 * `Record<ProviderSlug, ProviderAdapter>`, so a slug without an adapter does not compile.
 */
export const PROVIDER_SLUGS = [
  'openai',
  'anthropic',
  'azure-openai',
  'azure-ai',
  'bedrock',
  'vertex-ai',
  'google',
  'cohere',
  'mistral-ai',
  'groq',
  'together-ai',
  'deepseek',
  'fireworks-ai',
  'openrouter',
  'ollama',
  'jina',
  'voyage',
  'pinecone',
  'xai',
  'perplexity',
  'cerebras',
  'sambanova',
  'nebius',
  'novita',
  'hyperbolic',
  'deepinfra',
  'huggingface',
  'nvidia-nim',
  'github-models',
  'moonshot',
  'zhipu',
  'dashscope',
  'siliconflow',
  'ai21',
  'upstage',
  'nscale',
  'featherless',
  'ovhcloud',
  'scaleway',
  'cloudflare-workers-ai',
  'wandb',
  'vllm',
  'llama-cpp',
  'lm-studio',
  'tgi',
  'watsonx',
  'replicate',
] as const;

export type ProviderSlug = (typeof PROVIDER_SLUGS)[number];

/** The ProviderTarget sub-object a cloud setting belongs to. */
export type SettingGroup = 'azure' | 'vertex' | 'aws' | 'watsonx';

export interface ProviderSettingRow {
  /** Config leaf and managed-provider field. */
  field: string;
  /** Per-request header (lower case); absent when the value comes another way (`Authorization`). */
  header?: string;
  /** A credential: encrypted at rest, never returned, never accepted per request for deferred work. */
  secret: boolean;
  /** `target[group][key]`; absent: `target[key]`. */
  group?: SettingGroup;
  key: string;
  /** Longest value the managed-provider API stores. */
  maxLength: number;
  /** What a value must look like where it builds a hostname or a path segment (checked by the adapter). */
  pattern?: RegExp;
}

const DNS_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/i;

export const PROVIDER_SETTINGS = [
  { field: 'api_key', secret: true, key: 'apiKey', maxLength: 8192 },
  { field: 'custom_host', header: 'x-gateway-custom-host', secret: false, key: 'customHost', maxLength: 2048 },
  // A DNS label: it becomes `{resource}.openai.azure.com` or `{resource}.services.ai.azure.com` (SSRF guard).
  {
    field: 'azure_resource_name',
    header: 'x-gateway-azure-resource-name',
    secret: false,
    group: 'azure',
    key: 'resourceName',
    maxLength: 256,
    pattern: DNS_LABEL,
  },
  // Azure deployment names: letters, digits, `-`, `_`, `.`; one path segment.
  {
    field: 'azure_deployment_id',
    header: 'x-gateway-azure-deployment-id',
    secret: false,
    group: 'azure',
    key: 'deploymentId',
    maxLength: 256,
    pattern: /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/,
  },
  {
    field: 'azure_api_version',
    header: 'x-gateway-azure-api-version',
    secret: false,
    group: 'azure',
    key: 'apiVersion',
    maxLength: 64,
    pattern: /^\d{4}-\d{2}-\d{2}(?:-[a-z]+)?$/,
  },
  { field: 'azure_model_name', header: 'x-gateway-azure-model-name', secret: false, group: 'azure', key: 'modelName', maxLength: 256 },
  // Project id or number, optionally domain-scoped (`example.com:my-project`).
  {
    field: 'vertex_project_id',
    header: 'x-gateway-vertex-project-id',
    secret: false,
    group: 'vertex',
    key: 'projectId',
    maxLength: 256,
    pattern: /^(?:[a-z][a-z0-9.-]{0,62}[a-z0-9]:)?[a-z0-9][a-z0-9-]{0,61}[a-z0-9]$/,
  },
  // A DNS label: it becomes `{region}-aiplatform.googleapis.com` (SSRF guard).
  {
    field: 'vertex_region',
    header: 'x-gateway-vertex-region',
    secret: false,
    group: 'vertex',
    key: 'region',
    maxLength: 64,
    pattern: /^[a-z][a-z0-9-]{0,38}[a-z0-9]$/,
  },
  // Native Vertex AI batches (batch prediction jobs): `gs://bucket/prefix` for their input and output.
  {
    field: 'vertex_batch_gcs_uri',
    header: 'x-gateway-vertex-batch-gcs-uri',
    secret: false,
    group: 'vertex',
    key: 'batchGcsUri',
    maxLength: 1024,
    pattern: /^gs:\/\/[a-z0-9][a-z0-9._-]{1,220}[a-z0-9](?:\/(?:[A-Za-z0-9!_.*'()-]+\/)*[A-Za-z0-9!_.*'()-]*)?$/,
  },
  // Cloud Storage's JSON API root instead of https://storage.googleapis.com (a private endpoint, or a test's fake). SSRF rules as for a custom host.
  { field: 'vertex_storage_endpoint', header: 'x-gateway-vertex-storage-endpoint', secret: false, group: 'vertex', key: 'storageEndpoint', maxLength: 2048 },
  { field: 'aws_access_key_id', header: 'x-gateway-aws-access-key-id', secret: true, group: 'aws', key: 'accessKeyId', maxLength: 256 },
  { field: 'aws_secret_access_key', header: 'x-gateway-aws-secret-access-key', secret: true, group: 'aws', key: 'secretAccessKey', maxLength: 1024 },
  { field: 'aws_session_token', header: 'x-gateway-aws-session-token', secret: true, group: 'aws', key: 'sessionToken', maxLength: 8192 },
  // e.g. us-east-1, eu-central-2, us-gov-west-1. It builds a hostname (SSRF guard).
  { field: 'aws_region', header: 'x-gateway-aws-region', secret: false, group: 'aws', key: 'region', maxLength: 64, pattern: /^[a-z]{2}(-[a-z]+)+-\d$/ },
  // Native Bedrock batches (model invocation jobs): where their input and output go, `s3://bucket/prefix`
  // (the bucket builds an S3 hostname: a DNS-compatible bucket name, no dots), and the service role Bedrock assumes to read and write there.
  {
    field: 'aws_batch_s3_uri',
    header: 'x-gateway-aws-batch-s3-uri',
    secret: false,
    group: 'aws',
    key: 'batchS3Uri',
    maxLength: 1024,
    pattern: /^s3:\/\/[a-z0-9][a-z0-9-]{1,61}[a-z0-9](?:\/(?:[A-Za-z0-9!_.*'()-]+\/)*[A-Za-z0-9!_.*'()-]*)?$/,
  },
  {
    field: 'aws_batch_role_arn',
    header: 'x-gateway-aws-batch-role-arn',
    secret: false,
    group: 'aws',
    key: 'batchRoleArn',
    maxLength: 2048,
    pattern: /^arn:aws(?:-[a-z]+)*:iam::\d{12}:role\/[\w+=,.@/-]{1,512}$/,
  },
  // Where the batch bucket is reached instead of `https://{bucket}.s3.{region}.amazonaws.com` (path-style:
  // `{endpoint}/{bucket}/{key}`): an S3 interface endpoint, or a test's fake. SSRF rules as for a custom host.
  { field: 'aws_s3_endpoint', header: 'x-gateway-aws-s3-endpoint', secret: false, group: 'aws', key: 's3Endpoint', maxLength: 2048 },
  // IBM watsonx.ai (the IBM Cloud API key is `api_key`). The region builds
  // `{region}.ml.cloud.ibm.com` (SSRF guard): us-south, eu-de, eu-gb, jp-tok, au-syd, ca-tor, ...
  {
    field: 'watsonx_region',
    header: 'x-gateway-watsonx-region',
    secret: false,
    group: 'watsonx',
    key: 'region',
    maxLength: 64,
    pattern: /^[a-z]{2}-[a-z]+$/,
  },
  // A project or a deployment space scopes every call; one of them is required.
  {
    field: 'watsonx_project_id',
    header: 'x-gateway-watsonx-project-id',
    secret: false,
    group: 'watsonx',
    key: 'projectId',
    maxLength: 64,
    pattern: /^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/,
  },
  {
    field: 'watsonx_space_id',
    header: 'x-gateway-watsonx-space-id',
    secret: false,
    group: 'watsonx',
    key: 'spaceId',
    maxLength: 64,
    pattern: /^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/,
  },
  // Where the API key is exchanged for an IAM token; default https://iam.cloud.ibm.com/identity/token.
  // A caller-chosen URL, vetted by the same SSRF rules as a custom host.
  { field: 'watsonx_iam_url', header: 'x-gateway-watsonx-iam-url', secret: false, group: 'watsonx', key: 'iamUrl', maxLength: 2048 },
] as const satisfies readonly ProviderSettingRow[];

type Row = (typeof PROVIDER_SETTINGS)[number];
export type ProviderSettingName = Row['field'];
/** Settings stored in the clear. */
export type PlainSettingField = Extract<Row, { secret: false }>['field'];
/** Credentials. */
export type SecretSettingField = Extract<Row, { secret: true }>['field'];
/** Settings that belong to a cloud group (azure, vertex, aws), sent as `x-gateway-*` headers. */
export type CloudSettingField = Extract<Row, { group: SettingGroup }>['field'];

/** Every setting as an optional string (the config leaf and a merged managed provider). */
export type ProviderSettingValues = { [F in ProviderSettingName]?: string };

/** One row by field name (its header names the setting in 400s, its pattern validates it). */
export const SETTING = Object.fromEntries(PROVIDER_SETTINGS.map((row) => [row.field, row])) as {
  [F in ProviderSettingName]: Extract<Row, { field: F }>;
};

export const SETTING_NAMES: readonly ProviderSettingName[] = PROVIDER_SETTINGS.map((r) => r.field);
export const PLAIN_SETTING_FIELDS = PROVIDER_SETTINGS.filter((r) => !r.secret).map((r) => r.field) as readonly PlainSettingField[];
export const SECRET_SETTING_FIELDS = PROVIDER_SETTINGS.filter((r) => r.secret).map((r) => r.field) as readonly SecretSettingField[];
export const CLOUD_SETTINGS = PROVIDER_SETTINGS.filter((r): r is Extract<Row, { group: SettingGroup }> => 'group' in r);
export const CLOUD_SETTING_FIELDS = CLOUD_SETTINGS.map((r) => r.field) as readonly CloudSettingField[];

/** `{resourceName?, deploymentId?, …}` of one group, keyed as the table says. */
export type SettingGroupValues<G extends SettingGroup> = { [R in Extract<Row, { group: G }> as R['key']]?: string };

/** The settings part of a ProviderTarget. */
export type TargetSettings = { [R in Exclude<Row, { group: SettingGroup }> as R['key']]?: string } & {
  [G in SettingGroup]?: SettingGroupValues<G>;
};

const GROUPS: ReadonlyArray<[SettingGroup, ReadonlyArray<{ field: CloudSettingField; key: string }>]> = (['azure', 'vertex', 'aws', 'watsonx'] as const).map(
  (g) => [g, CLOUD_SETTINGS.filter((r) => r.group === g)],
);
const TOP_LEVEL = PROVIDER_SETTINGS.filter((r) => !('group' in r));

/**
 * Cloud settings from the `x-gateway-*` headers, only those sent (an empty header counts as
 * absent): a request names few or none, and an object holding every field, mostly
 * undefined, cost a request eight times as much to build and spread (bench/README.md).
 */
export function cloudSettingsFromHeaders(h: Record<string, string | undefined>): { [F in CloudSettingField]?: string } {
  const out: Record<string, string> = {};
  for (const row of CLOUD_SETTINGS) {
    const value = h[row.header];
    if (value) out[row.field] = value;
  }
  return out;
}

/** Settings by field -> where a ProviderTarget holds them; a group only when one of its settings is set. */
export function targetSettings(values: ProviderSettingValues): TargetSettings {
  const out: Record<string, unknown> = {};
  for (const row of TOP_LEVEL) out[row.key] = values[row.field];
  for (const [group, rows] of GROUPS) {
    if (!rows.some((r) => values[r.field] !== undefined)) continue;
    const sub: Record<string, string | undefined> = {};
    for (const r of rows) sub[r.key] = values[r.field];
    out[group] = sub;
  }
  return out as TargetSettings;
}

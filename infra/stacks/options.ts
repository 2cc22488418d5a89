import type { App } from 'aws-cdk-lib';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { SsoOption } from './console-sso';
import { DEFAULT_WAF_RATE_LIMIT } from './edge-waf-stack';
import type { FrontDoor } from './front-door';

/**
 * Deployment settings, given as CDK context (`cdk synth -c stage=dev -c memorySize=2048`)
 * or passed straight to `buildApp` by tests. Nothing here looks anything up in an AWS
 * account, so synthesis works offline and without credentials.
 */
export interface GatewayAppOptions {
  /** Names the stacks, the API stage and the KMS alias; several stages can share an account. */
  stage: string;
  /** Retention of the functions' log groups and the API access log. */
  logRetentionDays: RetentionDays;
  /** Memory of every endpoint-group function, in MB (CPU scales with it). */
  memorySize: number;
  /**
   * Per-group memory (MB) that overrides `memorySize` for those on-demand endpoint groups,
   * e.g. `{ policies: 512 }` (context `memorySizes=policies:512,guardrails:512`).
   */
  memorySizes?: Readonly<Record<string, number>>;
  /**
   * Where the request-serving functions run: `on-demand` (default; one request per
   * execution environment, billed per request and GB-second) or `managed-instances`
   * (Lambda Managed Instances: many concurrent requests per environment on EC2 capacity
   * that Lambda manages, billed per instance-hour plus a management fee).
   */
  capacity?: CapacityMode;
  /** Settings of `capacity: 'managed-instances'`; defaults in DEFAULT_MANAGED_INSTANCES. */
  managedInstances?: ManagedInstancesOptions;
  /** Run the cdk-nag AwsSolutions checks at synthesis (violations make synth throw). */
  nag?: boolean;
  /**
   * Email address subscribed to the alarm topic (SNS sends a confirmation mail first).
   * Optional: without it and without `alarmTopicArn` the topic is created with no subscriber.
   */
  alarmEmail?: string;
  /**
   * An existing SNS topic (same account and region) for the alarms instead of a new one. It
   * must let CloudWatch publish (and, if encrypted, let cloudwatch.amazonaws.com use its key).
   */
  alarmTopicArn?: string;
  /** An alarm (to the alarm topic) whenever a budget crosses an alert threshold: `-c budgetAlarm=true`. */
  budgetAlarm?: boolean;
  /**
   * The account's Lambda concurrent-executions quota in this Region (default 1,000): the
   * concurrency alarm fires at 80 % of it. Raise the quota first, then this value.
   */
  accountConcurrency?: number;
  /**
   * Reserved concurrency per on-demand endpoint group (context
   * `reservedConcurrency=gateway:800,admin:20`): a group keeps that many environments for
   * itself and can use no more, so a flood on one group cannot starve the others.
   */
  reservedConcurrency?: Readonly<Record<string, number>>;
  /**
   * The public entrance: `api-gateway` (default; REST API, usage plans, stage throttling) or
   * `function-url` (each group's Lambda function URL, RESPONSE_STREAM; no per-request fee).
   */
  frontDoor?: FrontDoor;
  /** `function-url` only: CloudFront in front (one base URL, origin access control, `wafArn`). */
  frontDoorCdn?: boolean;
  /** The CLOUDFRONT-scope (us-east-1) WAF web ACL the distribution uses; `frontDoorCdn` needs it. */
  wafArn?: string;
  /** Adds the us-east-1 stack with a web ACL for the distribution (EdgeWafStack): deploy it, then pass its ARN as `wafArn`. */
  edgeWaf?: { rateLimitPer5Minutes: number };
  /**
   * Origins whose web pages may call the API (the functions' CORS_ALLOWED_ORIGINS): a
   * comma-separated list, or '' for none. Absent: any origin, as the functions default to.
   */
  corsOrigins?: string;
  /** Console single sign-on: `-c sso=cognito`, or `-c ssoIssuer=<url> -c ssoClientId=<id>` [`-c ssoClientSecretArn=<arn>`] (docs/console-sso.md). */
  sso?: SsoOption;
}

export type CapacityMode = 'on-demand' | 'managed-instances';

export interface ManagedInstancesOptions {
  /** Endpoint groups on the capacity provider; the others (and every workflow worker) stay on demand. */
  groups: readonly string[];
  /** EC2 instance types the capacity provider may launch (Graviton: the functions are arm64). */
  instanceTypes: readonly string[];
  /** Memory of each execution environment in MB (Lambda Managed Instances need at least 2048). */
  memorySize: number;
  /** GiB of memory per vCPU of each execution environment (2 to 8): 2048 MB at 2 GiB/vCPU is one vCPU. */
  memoryGiBPerVCpu: number;
  /** Concurrent requests one execution environment takes (the Node.js default is 64 per vCPU). */
  perExecutionEnvironmentMaxConcurrency: number;
  /** Execution environments kept per function (3 by default: one per Availability Zone). */
  minExecutionEnvironments: number;
  /** Upper bound of execution environments per function; unset: no function-level bound. */
  maxExecutionEnvironments?: number;
  /** Upper bound of the capacity provider's vCPUs (12 to 15000): the cost ceiling. */
  maxVCpuCount: number;
  /**
   * An existing VPC: its id and the subnets (private, with a route to a NAT gateway or
   * another egress to the model providers) the instances run in; optional security groups
   * (default: a new one that allows all outbound traffic and no inbound). Without a VPC id
   * the stack creates a VPC (see `natGateways`, `maxAzs`).
   */
  vpcId?: string;
  subnetIds?: readonly string[];
  securityGroupIds?: readonly string[];
  /** New VPC only: NAT gateways for the calls to model providers (1 = cheapest, one per AZ = AZ-resilient egress). */
  natGateways: number;
  /** New VPC only: Availability Zones spanned. */
  maxAzs: number;
}

export const DEFAULT_MANAGED_INSTANCES = {
  groups: ['gateway'],
  instanceTypes: ['c7g.large', 'c7g.xlarge'],
  memorySize: 2048,
  memoryGiBPerVCpu: 2,
  perExecutionEnvironmentMaxConcurrency: 64,
  minExecutionEnvironments: 3,
  maxVCpuCount: 64,
  natGateways: 1,
  maxAzs: 3,
} as const satisfies ManagedInstancesOptions;

export const DEFAULT_OPTIONS = {
  stage: 'prod',
  logRetentionDays: RetentionDays.ONE_MONTH,
  memorySize: 1024,
  capacity: 'on-demand',
} as const satisfies GatewayAppOptions;

const STAGE = /^[a-z][a-z0-9-]{0,23}$/;
/** Deliberately plain: SNS validates the address and sends a confirmation mail anyway. */
const EMAIL = /^[^\s@,;]+@[^\s@,;]+\.[^\s@,;]+$/;
const SNS_TOPIC_ARN = /^arn:aws[a-z-]*:sns:[a-z]{2}(-[a-z]+)+-\d:\d{12}:[A-Za-z0-9_-]{1,256}$/;
const RETENTIONS = new Set(Object.values(RetentionDays).filter((v): v is number => typeof v === 'number'));

/** Validates options; the CDK CLI hands context values over as strings. */
export function resolveOptions(raw: {
  stage?: unknown;
  logRetentionDays?: unknown;
  memorySize?: unknown;
  memorySizes?: unknown;
  nag?: unknown;
  alarmEmail?: unknown;
  alarmTopicArn?: unknown;
  capacity?: unknown;
  managedInstances?: Record<string, unknown>;
  budgetAlarm?: unknown;
  accountConcurrency?: unknown;
  reservedConcurrency?: unknown;
  sso?: SsoContext;
  frontDoor?: unknown;
  frontDoorCdn?: unknown;
  wafArn?: unknown;
  edgeWaf?: unknown;
  wafRateLimit?: unknown;
  corsOrigins?: unknown;
}): GatewayAppOptions {
  const stage = String(raw.stage ?? DEFAULT_OPTIONS.stage);
  if (!STAGE.test(stage)) {
    throw new Error(`Context 'stage' must be lower-case letters, digits and '-', starting with a letter, at most 24 characters; got '${stage}'.`);
  }
  const logRetentionDays = Number(raw.logRetentionDays ?? DEFAULT_OPTIONS.logRetentionDays);
  if (!RETENTIONS.has(logRetentionDays)) {
    throw new Error(
      `Context 'logRetentionDays' must be one of the CloudWatch Logs retention periods (${[...RETENTIONS].sort((a, b) => a - b).join(', ')}); got '${String(raw.logRetentionDays)}'.`,
    );
  }
  const memorySize = Number(raw.memorySize ?? DEFAULT_OPTIONS.memorySize);
  if (!Number.isInteger(memorySize) || memorySize < 128 || memorySize > 10_240) {
    throw new Error(`Context 'memorySize' must be an integer number of MB between 128 and 10240; got '${String(raw.memorySize)}'.`);
  }
  const nag = raw.nag === undefined ? true : raw.nag !== false && raw.nag !== 'false';
  const alarmEmail = optionalString(raw.alarmEmail);
  if (alarmEmail !== undefined && !EMAIL.test(alarmEmail)) {
    throw new Error(`Context 'alarmEmail' must be one email address; got '${alarmEmail}'.`);
  }
  const alarmTopicArn = optionalString(raw.alarmTopicArn);
  if (alarmTopicArn !== undefined && !SNS_TOPIC_ARN.test(alarmTopicArn)) {
    throw new Error(
      `Context 'alarmTopicArn' must be the ARN of a standard (not FIFO) SNS topic, arn:aws:sns:<region>:<account>:<name>; got '${alarmTopicArn}'.`,
    );
  }
  const memorySizes = groupNumbers('memorySizes', raw.memorySizes, (name, v) => MB(name, v, 128));
  const reservedConcurrency = groupNumbers('reservedConcurrency', raw.reservedConcurrency, (name, v) => count(name, v, 1, 100_000));
  const accountConcurrency = raw.accountConcurrency === undefined ? undefined : count('accountConcurrency', raw.accountConcurrency, 10, 1_000_000);
  const capacity = String(raw.capacity ?? DEFAULT_OPTIONS.capacity);
  if (capacity !== 'on-demand' && capacity !== 'managed-instances') {
    throw new Error(`Context 'capacity' must be 'on-demand' or 'managed-instances'; got '${capacity}'.`);
  }
  const sso = resolveSso(raw.sso ?? {});
  const front = resolveFrontDoor(raw, sso.sso !== undefined);
  const corsOrigins = resolveCorsOrigins(raw.corsOrigins);
  return {
    stage,
    logRetentionDays: logRetentionDays as RetentionDays,
    memorySize,
    ...(memorySizes ? { memorySizes } : {}),
    capacity,
    ...(capacity === 'managed-instances' ? { managedInstances: resolveManagedInstances(raw.managedInstances ?? {}) } : {}),
    nag,
    ...(alarmEmail !== undefined ? { alarmEmail } : {}),
    ...(alarmTopicArn !== undefined ? { alarmTopicArn } : {}),
    ...(raw.budgetAlarm === true || raw.budgetAlarm === 'true' ? { budgetAlarm: true } : {}),
    ...(accountConcurrency !== undefined ? { accountConcurrency } : {}),
    ...(reservedConcurrency ? { reservedConcurrency } : {}),
    ...sso,
    ...front,
    ...(corsOrigins !== undefined ? { corsOrigins } : {}),
  };
}

const ORIGIN = /^https?:\/\/[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:\d{1,5})?$/;

/** `*` (the default, so: absent), `none` ('': no origin), or a list of origins such as `https://app.example.com`. */
function resolveCorsOrigins(value: unknown): string | undefined {
  const text = optionalString(value)?.toLowerCase();
  if (text === undefined || text === '*') return undefined;
  if (text === 'none') return '';
  const origins = text.split(',').map((o) => o.trim());
  const bad = origins.find((o) => !ORIGIN.test(o));
  if (bad !== undefined) {
    throw new Error(
      `Context 'corsOrigins' must be '*', 'none' or a comma-separated list of origins such as https://app.example.com (scheme, host and port only); got '${bad}'.`,
    );
  }
  return origins.join(',');
}

const flag = (value: unknown) => value === true || value === 'true';

/** A CLOUDFRONT-scope web ACL: WAF keeps those in us-east-1 under `global/webacl`. */
const CLOUDFRONT_WEB_ACL_ARN = /^arn:aws[a-z-]*:wafv2:us-east-1:\d{12}:global\/webacl\/[A-Za-z0-9_-]{1,128}\/[0-9a-f-]{36}$/;

function resolveFrontDoor(
  raw: { frontDoor?: unknown; frontDoorCdn?: unknown; wafArn?: unknown; edgeWaf?: unknown; wafRateLimit?: unknown },
  sso: boolean,
): Pick<GatewayAppOptions, 'frontDoor' | 'frontDoorCdn' | 'wafArn' | 'edgeWaf'> {
  const frontDoor = optionalString(raw.frontDoor) ?? 'api-gateway';
  if (frontDoor !== 'api-gateway' && frontDoor !== 'function-url') {
    throw new Error(`Context 'frontDoor' must be 'api-gateway' or 'function-url'; got '${frontDoor}'.`);
  }
  const cdn = flag(raw.frontDoorCdn);
  const wafArn = optionalString(raw.wafArn);
  if (cdn && frontDoor !== 'function-url')
    throw new Error("Context 'frontDoorCdn' puts CloudFront in front of function URLs: give it with 'frontDoor=function-url'.");
  if (wafArn !== undefined && !cdn) throw new Error("Context 'wafArn' is the web ACL of the CloudFront front door: give it with 'frontDoorCdn=true'.");
  if (wafArn !== undefined && !CLOUDFRONT_WEB_ACL_ARN.test(wafArn)) {
    throw new Error(
      `Context 'wafArn' must be the ARN of a CLOUDFRONT-scope WAF web ACL, arn:aws:wafv2:us-east-1:<account>:global/webacl/<name>/<id>; got '${wafArn}'.`,
    );
  }
  if (cdn && wafArn === undefined) {
    throw new Error(
      "Context 'frontDoorCdn=true' needs 'wafArn': CloudFront takes a web ACL of the CLOUDFRONT scope, which lives in us-east-1 only. Deploy one with 'npx cdk deploy AiGateway-<stage>-EdgeWaf -c edgeWaf=true' and pass its WebAclArn output, or give an existing one (docs/deploy.md, Front door).",
    );
  }
  if (sso && frontDoor === 'function-url') {
    throw new Error(
      "Console single sign-on needs a callback URL fixed at deploy time, which only the API Gateway front door has for now: use 'frontDoor=api-gateway' with 'sso' or 'ssoIssuer'.",
    );
  }
  const edgeWaf = flag(raw.edgeWaf)
    ? { rateLimitPer5Minutes: raw.wafRateLimit === undefined ? DEFAULT_WAF_RATE_LIMIT : count('wafRateLimit', raw.wafRateLimit, 10, 2_000_000_000) }
    : undefined;
  return {
    ...(frontDoor === 'function-url' ? { frontDoor } : {}),
    ...(cdn ? { frontDoorCdn: true, wafArn: wafArn! } : {}),
    ...(edgeWaf ? { edgeWaf } : {}),
  };
}

const count = (name: string, value: unknown, min: number, max: number): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`Context '${name}' must be an integer between ${min} and ${max}; got '${String(value)}'.`);
  return n;
};

type SsoContext = { sso?: unknown; issuer?: unknown; clientId?: unknown; clientSecretArn?: unknown; roleMap?: unknown; roleClaim?: unknown };

/** A complete Secrets Manager secret ARN, with the six-character suffix the service adds to the name: IAM grants exactly it. */
const SECRET_ARN = /^arn:aws[a-z-]*:secretsmanager:[a-z]{2}(-[a-z]+)+-\d:\d{12}:secret:[A-Za-z0-9/_+=.@-]+-[A-Za-z0-9]{6}$/;

function resolveSso(raw: SsoContext): { sso?: SsoOption } {
  const kind = optionalString(raw.sso);
  const issuer = optionalString(raw.issuer);
  const clientSecretArn = optionalString(raw.clientSecretArn);
  if (clientSecretArn !== undefined && !issuer) {
    throw new Error(
      "Context 'ssoClientSecretArn' is the client secret of an 'ssoIssuer' client: give it with 'ssoIssuer' and 'ssoClientId' (Cognito's client has no secret).",
    );
  }
  if (clientSecretArn !== undefined && !SECRET_ARN.test(clientSecretArn)) {
    throw new Error(
      `Context 'ssoClientSecretArn' must be the complete ARN of a Secrets Manager secret, arn:aws:secretsmanager:<region>:<account>:secret:<name>-<6 characters>; got '${clientSecretArn}'.`,
    );
  }
  if (kind === 'cognito') {
    if (issuer) throw new Error("Context 'sso=cognito' creates its own issuer: give no 'ssoIssuer'.");
    return { sso: { kind: 'cognito' } };
  }
  if (kind !== undefined) throw new Error(`Context 'sso' must be 'cognito' (or give 'ssoIssuer' and 'ssoClientId'); got '${kind}'.`);
  if (!issuer) return {};
  const clientId = optionalString(raw.clientId);
  if (!/^https:\/\/[^\s]+$/.test(issuer) || !clientId) throw new Error("Context 'ssoIssuer' must be an https URL, and 'ssoClientId' is required with it.");
  const roleMap = optionalString(raw.roleMap);
  const roleClaim = optionalString(raw.roleClaim);
  return {
    sso: {
      kind: 'oidc',
      issuer,
      clientId,
      ...(clientSecretArn ? { clientSecretArn } : {}),
      ...(roleMap ? { roleMap } : {}),
      ...(roleClaim ? { roleClaim } : {}),
    },
  };
}

/** Unset, empty and whitespace-only context values all mean "not given". */
function optionalString(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  const s = String(value).trim();
  return s === '' ? undefined : s;
}

const MB = (name: string, value: unknown, min: number): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > 10_240) {
    throw new Error(`Context '${name}' must be an integer number of MB between ${min} and 10240; got '${String(value)}'.`);
  }
  return n;
};

/**
 * A number per endpoint group: `policies:512,guardrails:512` (the CLI's form) or an object;
 * group names are checked by the API stack.
 */
function groupNumbers(option: string, value: unknown, check: (name: string, value: unknown) => number): Record<string, number> | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const entries =
    typeof value === 'object'
      ? Object.entries(value as Record<string, unknown>)
      : String(value)
          .split(',')
          .map((pair) => pair.split(':').map((x) => x.trim()) as [string, string?]);
  const out: Record<string, number> = {};
  for (const [group, n] of entries) {
    if (!group || n === undefined) throw new Error(`Context '${option}' must look like 'gateway:1024,policies:512'; got '${String(value)}'.`);
    out[group] = check(`${option}.${group}`, n);
  }
  return out;
}

const INSTANCE_TYPE = /^[a-z][a-z0-9-]*\.[a-z0-9]+$/;
const VPC_ID = /^vpc-[0-9a-f]{8,17}$/;
const SUBNET_ID = /^subnet-[0-9a-f]{8,17}$/;
const SG_ID = /^sg-[0-9a-f]{8,17}$/;

const list = (value: unknown): string[] | undefined => {
  if (value === undefined || value === null || value === '') return undefined;
  const items = Array.isArray(value) ? value.map(String) : String(value).split(',');
  return items.map((x) => x.trim()).filter(Boolean);
};

function int(name: string, value: unknown, fallback: number, min: number, max: number): number {
  if (value === undefined || value === null || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`Context '${name}' must be an integer between ${min} and ${max}; got '${String(value)}'.`);
  return n;
}

/** Validates the managed-instances settings against the limits Lambda documents. */
export function resolveManagedInstances(raw: Record<string, unknown>): ManagedInstancesOptions {
  const d = DEFAULT_MANAGED_INSTANCES;
  const groups = list(raw.groups) ?? [...d.groups];
  if (groups.length === 0) throw new Error(`Context 'managedInstanceGroups' must name at least one endpoint group.`);
  const instanceTypes = list(raw.instanceTypes) ?? [...d.instanceTypes];
  for (const t of instanceTypes) {
    if (!INSTANCE_TYPE.test(t)) throw new Error(`Context 'instanceTypes' must be EC2 instance types like c7g.large; got '${t}'.`);
  }
  const memorySize = raw.memorySize === undefined ? d.memorySize : MB('managedInstanceMemorySize', raw.memorySize, 2048);
  const memoryGiBPerVCpu = raw.memoryGiBPerVCpu === undefined ? d.memoryGiBPerVCpu : Number(raw.memoryGiBPerVCpu);
  if (!(memoryGiBPerVCpu >= 2 && memoryGiBPerVCpu <= 8)) {
    throw new Error(`Context 'memoryGiBPerVCpu' must be between 2 and 8; got '${String(raw.memoryGiBPerVCpu)}'.`);
  }
  if (memorySize / 1024 < memoryGiBPerVCpu) {
    throw new Error(
      `An execution environment has at least one vCPU: managedInstanceMemorySize ${memorySize} MB is below memoryGiBPerVCpu ${memoryGiBPerVCpu} GiB.`,
    );
  }
  const perExecutionEnvironmentMaxConcurrency = int(
    'perExecutionEnvironmentMaxConcurrency',
    raw.perExecutionEnvironmentMaxConcurrency,
    d.perExecutionEnvironmentMaxConcurrency,
    1,
    1600,
  );
  const minExecutionEnvironments = int('minExecutionEnvironments', raw.minExecutionEnvironments, d.minExecutionEnvironments, 0, 15_000);
  const maxExecutionEnvironments =
    raw.maxExecutionEnvironments === undefined || raw.maxExecutionEnvironments === ''
      ? undefined
      : int('maxExecutionEnvironments', raw.maxExecutionEnvironments, 0, Math.max(1, minExecutionEnvironments), 15_000);
  const maxVCpuCount = int('maxVCpuCount', raw.maxVCpuCount, d.maxVCpuCount, 12, 15_000);
  const vpcId = optionalString(raw.vpcId);
  const subnetIds = list(raw.subnetIds);
  const securityGroupIds = list(raw.securityGroupIds);
  if (vpcId !== undefined) {
    if (!VPC_ID.test(vpcId)) throw new Error(`Context 'vpcId' must be a VPC id (vpc-...); got '${vpcId}'.`);
    if (!subnetIds || subnetIds.length < 1 || subnetIds.length > 16 || !subnetIds.every((x) => SUBNET_ID.test(x))) {
      throw new Error(`Context 'subnetIds' must list 1 to 16 subnet ids (subnet-...) of VPC ${vpcId}; got '${String(raw.subnetIds)}'.`);
    }
    if (securityGroupIds && (securityGroupIds.length > 5 || !securityGroupIds.every((x) => SG_ID.test(x)))) {
      throw new Error(`Context 'securityGroupIds' must list at most 5 security group ids (sg-...); got '${String(raw.securityGroupIds)}'.`);
    }
  } else if (subnetIds || securityGroupIds) {
    throw new Error(`Context 'subnetIds' and 'securityGroupIds' need 'vpcId' (the VPC they belong to).`);
  }
  const maxAzs = int('maxAzs', raw.maxAzs, d.maxAzs, 1, 6);
  const natGateways = int('natGateways', raw.natGateways, d.natGateways, 1, maxAzs);
  return {
    groups,
    instanceTypes,
    memorySize,
    memoryGiBPerVCpu,
    perExecutionEnvironmentMaxConcurrency,
    minExecutionEnvironments,
    ...(maxExecutionEnvironments !== undefined ? { maxExecutionEnvironments } : {}),
    maxVCpuCount,
    ...(vpcId !== undefined ? { vpcId, subnetIds: subnetIds!, ...(securityGroupIds ? { securityGroupIds } : {}) } : {}),
    natGateways,
    maxAzs,
  };
}

/**
 * Reads the options from the app's context: `stage`, `logRetentionDays`, `memorySize`,
 * `memorySizes`, `nag`, `alarmEmail`, `alarmTopicArn`, `capacity` and the managed-instances
 * settings (`managedInstanceGroups`, `instanceTypes`, `managedInstanceMemorySize`,
 * `memoryGiBPerVCpu`, `perExecutionEnvironmentMaxConcurrency`, `minExecutionEnvironments`,
 * `maxExecutionEnvironments`, `maxVCpuCount`, `vpcId`, `subnetIds`, `securityGroupIds`,
 * `natGateways`, `maxAzs`), `budgetAlarm`, `accountConcurrency`, `reservedConcurrency` and the
 * front door (`frontDoor`, `frontDoorCdn`, `wafArn`, `edgeWaf`, `wafRateLimit`).
 */
export function optionsFromContext(app: App): GatewayAppOptions {
  const ctx = (key: string): unknown => app.node.tryGetContext(key);
  return resolveOptions({
    stage: ctx('stage'),
    logRetentionDays: ctx('logRetentionDays'),
    memorySize: ctx('memorySize'),
    memorySizes: ctx('memorySizes'),
    reservedConcurrency: ctx('reservedConcurrency'),
    accountConcurrency: ctx('accountConcurrency'),
    nag: ctx('nag'),
    alarmEmail: ctx('alarmEmail'),
    alarmTopicArn: ctx('alarmTopicArn'),
    capacity: ctx('capacity'),
    managedInstances: {
      groups: ctx('managedInstanceGroups'),
      instanceTypes: ctx('instanceTypes'),
      memorySize: ctx('managedInstanceMemorySize'),
      memoryGiBPerVCpu: ctx('memoryGiBPerVCpu'),
      perExecutionEnvironmentMaxConcurrency: ctx('perExecutionEnvironmentMaxConcurrency'),
      minExecutionEnvironments: ctx('minExecutionEnvironments'),
      maxExecutionEnvironments: ctx('maxExecutionEnvironments'),
      maxVCpuCount: ctx('maxVCpuCount'),
      vpcId: ctx('vpcId'),
      subnetIds: ctx('subnetIds'),
      securityGroupIds: ctx('securityGroupIds'),
      natGateways: ctx('natGateways'),
      maxAzs: ctx('maxAzs'),
    },
    budgetAlarm: ctx('budgetAlarm'),
    frontDoor: ctx('frontDoor'),
    frontDoorCdn: ctx('frontDoorCdn'),
    wafArn: ctx('wafArn'),
    edgeWaf: ctx('edgeWaf'),
    wafRateLimit: ctx('wafRateLimit'),
    corsOrigins: ctx('corsOrigins'),
    sso: {
      sso: ctx('sso'),
      issuer: ctx('ssoIssuer'),
      clientId: ctx('ssoClientId'),
      clientSecretArn: ctx('ssoClientSecretArn'),
      roleMap: ctx('ssoRoleMap'),
      roleClaim: ctx('ssoRoleClaim'),
    },
  });
}

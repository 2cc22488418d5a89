import type { App } from 'aws-cdk-lib';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';

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
}

export const DEFAULT_OPTIONS = {
  stage: 'prod',
  logRetentionDays: RetentionDays.ONE_MONTH,
  memorySize: 1024,
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
  nag?: unknown;
  alarmEmail?: unknown;
  alarmTopicArn?: unknown;
  budgetAlarm?: unknown;
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
  return {
    stage,
    logRetentionDays: logRetentionDays as RetentionDays,
    memorySize,
    nag,
    ...(alarmEmail !== undefined ? { alarmEmail } : {}),
    ...(alarmTopicArn !== undefined ? { alarmTopicArn } : {}),
    ...(raw.budgetAlarm === true || raw.budgetAlarm === 'true' ? { budgetAlarm: true } : {}),
  };
}

/** Unset, empty and whitespace-only context values all mean "not given". */
function optionalString(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  const s = String(value).trim();
  return s === '' ? undefined : s;
}

/** Reads `stage`, `logRetentionDays`, `memorySize`, `nag`, `alarmEmail`, `alarmTopicArn` and `budgetAlarm` from the app's context. */
export function optionsFromContext(app: App): GatewayAppOptions {
  const ctx = (key: string): unknown => app.node.tryGetContext(key);
  return resolveOptions({
    stage: ctx('stage'),
    logRetentionDays: ctx('logRetentionDays'),
    memorySize: ctx('memorySize'),
    nag: ctx('nag'),
    alarmEmail: ctx('alarmEmail'),
    alarmTopicArn: ctx('alarmTopicArn'),
    budgetAlarm: ctx('budgetAlarm'),
  });
}

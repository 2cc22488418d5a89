import { awsEnvCredentials, config } from '../shared/config';
import { regionalEndpoint } from '../shared/aws/json-client';
import { signHeaders } from '../shared/aws/sigv4';
import { GatewayError } from '../shared/errors';
import { log, type LogContext } from '../shared/telemetry/logger';
import type { BudgetPolicy } from './budget-model';

/**
 * One CloudWatch alarm per budget, when the stack is deployed with `-c budgetAlarm=true`
 * (which sets BUDGET_ALARM_TOPIC_ARN): budgets are data, created at run time, so their
 * alarms are managed here as the budget is written, not by the stack. The alarm watches the
 * budget's own `BudgetThresholdCrossed` metric (dimensions service, workspace, budget;
 * published by ./budget-spend.ts) and notifies the alarm topic once a threshold is crossed.
 * An active budget has its alarm; an archived or deleted one has none.
 *
 * CloudWatch's Query protocol (a form-encoded POST, SigV4 service `monitoring`): two
 * operations on a control-plane path do not justify an SDK client in the bundle.
 */

const API_VERSION = '2010-08-01';
const TIMEOUT_MS = 10_000;

export const budgetAlarmName = (budgetId: string) => `${config().budgetAlarms.namePrefix}${budgetId}`;

async function callCloudWatch(action: string, params: Record<string, string | number>): Promise<void> {
  const { endpoint } = config().budgetAlarms;
  const url = new URL(endpoint ?? regionalEndpoint('monitoring', config().region));
  const body = new URLSearchParams({
    Action: action,
    Version: API_VERSION,
    ...Object.fromEntries(Object.entries(params).map(([k, v]) => [k, String(v)])),
  }).toString();
  const headers = await signHeaders(
    { method: 'POST', url, headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' }, body },
    { region: config().region, service: 'monitoring', credentials: awsEnvCredentials() },
  );
  const res = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(TIMEOUT_MS) });
  if (!res.ok) {
    const text = await res.text();
    const code = /<Code>([^<]+)<\/Code>/.exec(text)?.[1] ?? `HTTP ${res.status}`;
    throw new Error(`CloudWatch ${action} failed: ${code}`);
  }
}

/** PutMetricAlarm's parameters for a budget (Query-protocol member lists). */
export function alarmParams(budget: BudgetPolicy, topicArn: string): Record<string, string | number> {
  const dimensions = { service: config().serviceName, workspace: budget.workspace_id, budget: budget.id };
  const params: Record<string, string | number> = {
    AlarmName: budgetAlarmName(budget.id),
    AlarmDescription: `AI gateway budget ${budget.name ? `'${budget.name}' ` : ''}(${budget.id}): $${budget.limit_usd} per ${budget.period} crossed an alert threshold or its limit.`,
    Namespace: config().metricsNamespace,
    MetricName: 'BudgetThresholdCrossed',
    Statistic: 'Sum',
    Period: 300,
    EvaluationPeriods: 1,
    Threshold: 1,
    ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    TreatMissingData: 'notBreaching',
    'AlarmActions.member.1': topicArn,
  };
  Object.entries(dimensions).forEach(([name, value], i) => {
    params[`Dimensions.member.${i + 1}.Name`] = name;
    params[`Dimensions.member.${i + 1}.Value`] = value;
  });
  return params;
}

/**
 * Bring a budget's alarm in line with it (`undefined`: the budget was deleted). A failure
 * is a 502 that says the budget itself was saved; repeating the write repeats the sync.
 */
export async function syncBudgetAlarm(budgetId: string, budget: BudgetPolicy | undefined, context: LogContext): Promise<void> {
  const { topicArn } = config().budgetAlarms;
  if (!topicArn) return;
  try {
    if (budget?.status === 'active') await callCloudWatch('PutMetricAlarm', alarmParams(budget, topicArn));
    else await callCloudWatch('DeleteAlarms', { 'AlarmNames.member.1': budgetAlarmName(budgetId) });
  } catch (err) {
    log.error('budget alarm sync failed', { budget_id: budgetId, error: (err as Error).message }, context);
    throw new GatewayError(
      502,
      'upstream_error',
      `The budget was saved, but its CloudWatch alarm could not be updated (${(err as Error).message}); repeat the request to retry.`,
      null,
      'alarm_sync_failed',
    );
  }
}

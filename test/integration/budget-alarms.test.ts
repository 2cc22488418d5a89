import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startChildGateway } from '../support/child-gateway';
import { startTestGateway } from '../support/gateway';

/**
 * Per-budget CloudWatch alarms (`-c budgetAlarm=true` on AWS): a gateway process started
 * with BUDGET_ALARM_TOPIC_ARN keeps one alarm per active budget, through CloudWatch's Query
 * API, here a fake that records the signed form posts and can be told to fail.
 */

interface Call {
  authorization: string;
  contentType: string;
  params: Record<string, string>;
}

let gw: LocalGateway;
let cloudwatch: Server;
let child: { url: string; adminKey: string; stop: () => Promise<void> };
const calls: Call[] = [];
let failNext = false;

const TOPIC = 'arn:aws:sns:us-east-1:123456789012:ai-gateway-test-alarms';

beforeAll(async () => {
  cloudwatch = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      calls.push({
        authorization: String(req.headers.authorization ?? ''),
        contentType: String(req.headers['content-type'] ?? ''),
        params: Object.fromEntries(new URLSearchParams(body)),
      });
      if (failNext) {
        failNext = false;
        res.writeHead(400, { 'content-type': 'text/xml' });
        return res.end('<ErrorResponse><Error><Type>Sender</Type><Code>LimitExceeded</Code><Message>too many alarms</Message></Error></ErrorResponse>');
      }
      res.writeHead(200, { 'content-type': 'text/xml' });
      res.end('<PutMetricAlarmResponse><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></PutMetricAlarmResponse>');
    });
  });
  await new Promise<void>((r) => cloudwatch.listen(0, '127.0.0.1', () => r()));
  gw = await startTestGateway();
  child = await startChildGateway(gw, {
    BUDGET_ALARM_TOPIC_ARN: TOPIC,
    BUDGET_ALARM_PREFIX: 'ai-gateway-test-budget-',
    AWS_ENDPOINT_URL_CLOUDWATCH: `http://127.0.0.1:${(cloudwatch.address() as AddressInfo).port}`,
  });
});
afterAll(async () => {
  await child?.stop();
  await gw?.stop();
  await new Promise((r) => cloudwatch?.close(r));
});

async function admin(method: string, path: string, body?: unknown) {
  const res = await fetch(`${child.url}${path}`, {
    method,
    headers: { 'x-gateway-api-key': child.adminKey, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

describe('per-budget alarms', () => {
  it('creating a budget puts its alarm; archiving and deleting remove it', async () => {
    calls.length = 0;
    const created = await admin('POST', '/v1/policies/budgets', { type: 'budget', name: 'ops', limit_usd: 5, period: 'day' });
    expect(created.status).toBe(200);
    const put = calls.at(-1)!;
    expect(put.contentType).toContain('application/x-www-form-urlencoded');
    expect(put.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=[^/]+\/\d{8}\/us-east-1\/monitoring\/aws4_request, SignedHeaders=[^,]+, Signature=[0-9a-f]{64}$/,
    );
    expect(put.params).toMatchObject({
      Action: 'PutMetricAlarm',
      Version: '2010-08-01',
      AlarmName: `ai-gateway-test-budget-${created.body.id}`,
      Namespace: 'AiGateway',
      MetricName: 'BudgetThresholdCrossed',
      Statistic: 'Sum',
      Threshold: '1',
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      'AlarmActions.member.1': TOPIC,
      'Dimensions.member.1.Name': 'service',
      'Dimensions.member.2.Name': 'workspace',
      'Dimensions.member.2.Value': created.body.workspace_id,
      'Dimensions.member.3.Name': 'budget',
      'Dimensions.member.3.Value': created.body.id,
    });

    expect((await admin('PUT', `/v1/policies/budgets/${created.body.id}`, { limit_usd: 7 })).status).toBe(200);
    expect(calls.at(-1)!.params).toMatchObject({ Action: 'PutMetricAlarm', AlarmName: `ai-gateway-test-budget-${created.body.id}` });
    expect(calls.at(-1)!.params.AlarmDescription).toContain('$7 per day');

    expect((await admin('POST', `/v1/policies/budgets/${created.body.id}/archive`)).status).toBe(200);
    expect(calls.at(-1)!.params).toEqual({ Action: 'DeleteAlarms', Version: '2010-08-01', 'AlarmNames.member.1': `ai-gateway-test-budget-${created.body.id}` });
    const before = calls.length;
    expect((await admin('DELETE', `/v1/policies/budgets/${created.body.id}`)).status).toBe(200);
    expect(calls).toHaveLength(before + 1);
    expect(calls.at(-1)!.params.Action).toBe('DeleteAlarms');
  });

  it('a CloudWatch failure is a 502 that says the budget was saved; repeating the write syncs the alarm', async () => {
    failNext = true;
    const created = await admin('POST', '/v1/policies/budgets', { type: 'budget', limit_usd: 1, period: 'week' });
    expect(created.status).toBe(502);
    expect(created.body.error).toMatchObject({ code: 'alarm_sync_failed' });
    expect(created.body.error.message).toContain('LimitExceeded');
    const listed = await admin('GET', '/v1/policies/budgets');
    const saved = listed.body.data.find((b: { limit_usd: number; period: string }) => b.limit_usd === 1 && b.period === 'week');
    expect(saved).toBeDefined();
    expect((await admin('PUT', `/v1/policies/budgets/${saved.id}`, { limit_usd: 1 })).status).toBe(200);
    expect(calls.at(-1)!.params).toMatchObject({ Action: 'PutMetricAlarm', AlarmName: `ai-gateway-test-budget-${saved.id}` });
  });

  it('rate-limit policies have no alarms', async () => {
    const before = calls.length;
    expect((await admin('POST', '/v1/policies/rate-limits', { type: 'requests', unit: 'rpm', value: 10 })).status).toBe(200);
    expect(calls).toHaveLength(before);
  });
});

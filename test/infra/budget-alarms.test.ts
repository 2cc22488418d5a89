import { Template } from 'aws-cdk-lib/assertions';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../infra/stacks/index';
import { testApp } from '../support/cdk-app';

/** `-c budgetAlarm=true`: the policies function manages one alarm per budget, and nothing else. */

const skipBundling = () => testApp({ context: { 'aws:cdk:bundling-stacks': [] } });
const OPTIONS = { stage: 'test', logRetentionDays: RetentionDays.TWO_WEEKS, memorySize: 1024 };

describe('budget alarms option', () => {
  it('gives the policies function the topic, the alarm-name prefix and a put/delete grant for that prefix only; cdk-nag stays clean', () => {
    const app = skipBundling();
    const stacks = buildApp(app, { ...OPTIONS, budgetAlarm: true });
    expect(() => app.synth()).not.toThrow();
    const api = Template.fromStack(stacks.api);
    const policiesFn = Object.values(api.findResources('AWS::Lambda::Function')).find((r) =>
      JSON.stringify(r.Properties.Environment?.Variables ?? {}).includes('BUDGET_ALARM_PREFIX'),
    );
    expect(policiesFn).toBeDefined();
    const env = policiesFn!.Properties.Environment.Variables;
    expect(env.BUDGET_ALARM_PREFIX).toBe('ai-gateway-test-budget-');
    expect(JSON.stringify(env.BUDGET_ALARM_TOPIC_ARN)).toContain(':ai-gateway-test-alarms');
    const statements = Object.values(api.findResources('AWS::IAM::Policy')).flatMap((p) => p.Properties.PolicyDocument.Statement);
    const grant = statements.find((s) => s.Sid === 'BudgetAlarms');
    expect(grant.Action).toEqual(['cloudwatch:PutMetricAlarm', 'cloudwatch:DeleteAlarms']);
    expect(JSON.stringify(grant.Resource)).toContain(':alarm:ai-gateway-test-budget-*');
    // No other function may touch alarms.
    expect(statements.filter((s) => JSON.stringify(s.Action).includes('cloudwatch:PutMetricAlarm'))).toHaveLength(1);
  });

  it('is off by default: no function manages alarms', () => {
    const stacks = buildApp(skipBundling(), { ...OPTIONS, nag: false });
    expect(JSON.stringify(Template.fromStack(stacks.api).toJSON())).not.toContain('BUDGET_ALARM');
  });
});

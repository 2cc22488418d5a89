import { type App, Validations, type CfnElement, type Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { TABLE_NAMES } from '../../functions/shared/tables';
import { MIN_ADMIN_KEY_LENGTH } from '../../functions/workers/bootstrap-admin';
import { DYNAMODB_READ_ACTIONS, DYNAMODB_WRITE_ACTIONS, WORKER_ACCESS } from '../../infra/stacks/access';
import { ADMIN_KEY_LENGTH, BOOTSTRAP_WORKER, BootstrapStack } from '../../infra/stacks/bootstrap-stack';
import { DataStack } from '../../infra/stacks/data-stack';
import { testApp } from '../support/cdk-app';

const logicalId = (stack: Stack, element: unknown) => stack.getLogicalId(element as CfnElement);

// ---- the stack (bundling skipped, cdk-nag on) ------------------------------------------------

describe('bootstrap stack', () => {
  let app: App;
  let data: DataStack;
  let stack: BootstrapStack;
  let t: Template;
  let synthError: Error | undefined;

  beforeAll(() => {
    app = testApp({ context: { 'aws:cdk:bundling-stacks': [] } });
    data = new DataStack(app, 'Data', { stage: 'test' });
    stack = new BootstrapStack(app, 'Bootstrap', {
      stage: 'test',
      logRetentionDays: RetentionDays.TWO_WEEKS,
      tables: data.tables,
      providerCredentialsKey: data.providerCredentialsKey,
    });
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    try {
      app.synth();
    } catch (err) {
      synthError = err as Error;
    }
    t = Template.fromStack(stack);
  });

  const secretId = () => logicalId(stack, stack.adminKeySecret.node.defaultChild);
  const fnId = () => logicalId(stack, stack.worker.function.node.defaultChild);

  it('keeps the admin key in a generated, retained Secrets Manager secret', () => {
    t.resourceCountIs('AWS::SecretsManager::Secret', 1);
    const secret = t.findResources('AWS::SecretsManager::Secret')[secretId()]!;
    expect(secret.DeletionPolicy).toBe('Retain');
    expect(secret.UpdateReplacePolicy).toBe('Retain');
    // Secrets Manager generates the value: the template holds no SecretString at all.
    expect(secret.Properties.SecretString).toBeUndefined();
    expect(secret.Properties.GenerateSecretString).toEqual({
      PasswordLength: ADMIN_KEY_LENGTH,
      ExcludePunctuation: true,
      IncludeSpace: false,
      RequireEachIncludedType: true,
    });
    expect(ADMIN_KEY_LENGTH).toBeGreaterThanOrEqual(MIN_ADMIN_KEY_LENGTH);
    // No customer key is named: encrypted with the account's aws/secretsmanager key.
    expect(secret.Properties.KmsKeyId).toBeUndefined();
  });

  it('runs the bootstrap function as a custom resource that is handed the secret ARN only', () => {
    t.resourceCountIs('Custom::GatewayBootstrap', 1);
    const [id, cr] = Object.entries(t.findResources('Custom::GatewayBootstrap'))[0]!;
    expect(cr.Properties).toEqual({
      ServiceToken: { 'Fn::GetAtt': [fnId(), 'Arn'] },
      SecretArn: { Ref: secretId() },
    });
    // Deleting the stack removes the custom resource but never the data (Delete does nothing).
    expect(cr.DeletionPolicy).toBe('Delete');
    // The role's policy (table and secret grants) exists before the first invocation.
    const policyId = logicalId(stack, stack.worker.role.node.findChild('DefaultPolicy').node.defaultChild);
    expect(cr.DependsOn).toEqual(expect.arrayContaining([policyId]));
    expect(id).toMatch(/^AdminKey/);
  });

  it('deploys the bootstrap function like every worker: runtime, tracing, JSON logs with retention', () => {
    t.resourceCountIs('AWS::Lambda::Function', 1);
    const fn = t.findResources('AWS::Lambda::Function')[fnId()]!;
    expect(fn.Properties).toMatchObject({
      FunctionName: `ai-gateway-test-${BOOTSTRAP_WORKER.name}`,
      Runtime: 'nodejs22.x',
      Architectures: ['arm64'],
      Timeout: BOOTSTRAP_WORKER.timeoutSeconds,
      TracingConfig: { Mode: 'Active' },
      LoggingConfig: { LogFormat: 'JSON', LogGroup: { Ref: logicalId(stack, stack.worker.logGroup.node.defaultChild) } },
    });
    t.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 14 });
  });

  it('lets the function read that one secret and the control table, nothing else', () => {
    const policyId = logicalId(stack, stack.worker.role.node.findChild('DefaultPolicy').node.defaultChild);
    const statements = t.findResources('AWS::IAM::Policy')[policyId]!.Properties.PolicyDocument.Statement as Array<{
      Action: string | string[];
      Resource: unknown;
    }>;
    const actions = (s: { Action: string | string[] }) => [s.Action].flat();
    const secrets = statements.filter((s) => actions(s).some((a) => a.startsWith('secretsmanager:')));
    expect(secrets).toHaveLength(1);
    expect(actions(secrets[0]!)).toEqual(['secretsmanager:GetSecretValue']);
    expect(secrets[0]!.Resource).toEqual({ Ref: secretId() });

    const dynamo = statements.filter((s) => actions(s).some((a) => a.startsWith('dynamodb:')));
    expect(WORKER_ACCESS[BOOTSTRAP_WORKER.name]!.tables).toEqual({ control: 'readWrite' });
    expect(dynamo).toHaveLength(1);
    expect(actions(dynamo[0]!)).toEqual([...DYNAMODB_READ_ACTIONS, ...DYNAMODB_WRITE_ACTIONS]);
    const resources = JSON.stringify(dynamo[0]!.Resource);
    const controlId = logicalId(data, data.tables.control.node.defaultChild);
    for (const name of TABLE_NAMES) expect(resources.includes(logicalId(data, data.tables[name].node.defaultChild)), name).toBe(name === 'control');
    expect(resources).toContain(controlId);

    expect(statements.flatMap(actions).filter((a) => a.startsWith('kms:'))).toEqual([]);
    for (const s of statements.filter((st) => JSON.stringify(st.Resource) === '"*"')) expect(actions(s).every((a) => a.startsWith('xray:'))).toBe(true);
  });

  it('outputs where the key is and how to read it, never the key', () => {
    const outputs = t.toJSON().Outputs as Record<string, { Value: unknown }>;
    expect(outputs.AdminKeySecretArn!.Value).toEqual({ Ref: secretId() });
    expect(JSON.stringify(outputs.ReadAdminKeyCommand!.Value)).toContain('aws secretsmanager get-secret-value --secret-id ');
    expect(JSON.stringify(outputs.ReadAdminKeyCommand!.Value)).toContain('--query SecretString --output text');
    expect(outputs.AdminKeySecretName).toBeDefined();
    // Nothing anywhere in the template can resolve to the secret's value: no dynamic
    // reference, no SecretString attribute, no secretValue token.
    const text = JSON.stringify(t.toJSON());
    expect(text).not.toMatch(/resolve:secretsmanager/);
    expect(text).not.toMatch(/"Fn::GetAtt":\["[^"]*","SecretString/);
    for (const o of Object.values(outputs)) expect(JSON.stringify(o.Value)).not.toMatch(/SecretString"|resolve:/);
    // The function's environment holds table names and ids, no secret.
    const env = JSON.stringify(t.findResources('AWS::Lambda::Function')[fnId()]!.Properties.Environment);
    expect(env).not.toContain(secretId());
  });

  it('deploys after the data stack', () => {
    expect(stack.dependencies).toContain(data);
  });

  it('has no unacknowledged cdk-nag findings', () => {
    expect(synthError?.message).toBeUndefined();
  });
});

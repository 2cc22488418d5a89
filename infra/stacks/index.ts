import { Tags, Validations, type App } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { ApiStack } from './api-stack';
import { DataStack } from './data-stack';
import type { GatewayAppOptions } from './options';
import { WorkflowsStack } from './workflows-stack';

export { ApiStack } from './api-stack';
export { DataStack } from './data-stack';
export { WorkflowsStack } from './workflows-stack';
export { DEFAULT_OPTIONS, optionsFromContext, resolveOptions, type GatewayAppOptions } from './options';

export interface GatewayStacks {
  data: DataStack;
  api: ApiStack;
  workflows: WorkflowsStack;
}

/**
 * Builds the gateway's stacks into `app`. infra/app.ts calls it with the context options;
 * tests call it with an App that skips bundling (`'aws:cdk:bundling-stacks': []`).
 * Stacks are environment-agnostic (no account/region, no lookups): synthesis is offline.
 */
export function buildApp(app: App, options: GatewayAppOptions): GatewayStacks {
  const { stage } = options;
  const prefix = `AiGateway-${stage}`;

  const data = new DataStack(app, `${prefix}-Data`, {
    stackName: `${prefix}-Data`,
    description: `AI gateway (${stage}): DynamoDB tables and the provider-credentials KMS key (retained on delete)`,
    stage,
  });
  const api = new ApiStack(app, `${prefix}-Api`, {
    stackName: `${prefix}-Api`,
    description: `AI gateway (${stage}): REST API and one response-streaming Lambda per endpoint group`,
    stage,
    memorySize: options.memorySize,
    logRetentionDays: options.logRetentionDays,
    tables: data.tables,
    providerCredentialsKey: data.providerCredentialsKey,
  });

  // State machines, their workers and queues (infra/workflows/registry.ts). It hands env
  // vars and grants to the API functions that feed or stop workflows, so the API stack
  // depends on it (never the other way: no cycle).
  const workflows = new WorkflowsStack(app, `${prefix}-Workflows`, {
    stackName: `${prefix}-Workflows`,
    description: `AI gateway (${stage}): Step Functions workflows, their worker Lambdas, queues and dead-letter queues`,
    stage,
    memorySize: options.memorySize,
    logRetentionDays: options.logRetentionDays,
    tables: data.tables,
    providerCredentialsKey: data.providerCredentialsKey,
    apiFunctions: api.functions,
  });

  Tags.of(app).add('application', 'ai-gateway');
  Tags.of(app).add('ai-gateway:stage', stage);

  if (options.nag ?? true) Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { data, api, workflows };
}

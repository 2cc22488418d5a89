import { Tags, Validations, type App } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { ApiStack } from './api-stack';
import { DataStack } from './data-stack';
import type { GatewayAppOptions } from './options';

export { ApiStack } from './api-stack';
export { DataStack } from './data-stack';
export { DEFAULT_OPTIONS, optionsFromContext, resolveOptions, type GatewayAppOptions } from './options';

export interface GatewayStacks {
  data: DataStack;
  api: ApiStack;
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

  Tags.of(app).add('application', 'ai-gateway');
  Tags.of(app).add('ai-gateway:stage', stage);

  if (options.nag ?? true) Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { data, api };
}

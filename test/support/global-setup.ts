import { rmSync } from 'node:fs';
import type { TestProject } from 'vitest/node';
import { ensureConsoleBuilt } from '../../infra/console-build';
import { startDynamoDbLocal } from '../../infra/local/dynamodb';
import { sharedBundlesRoot, testRunId } from './shared-dirs';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
    /** Names what the run's files share on disk (production-bundles.ts). */
    testRunId: string;
  }
}

/** One DynamoDB Local (one JVM) for the whole run; each test file uses its own tables. */
export default async function setup(project: TestProject) {
  // The gateway serves the console from its build (functions/console/dist): built once here when missing or stale.
  const [dynamo] = await Promise.all([startDynamoDbLocal(null), ensureConsoleBuilt()]);
  project.provide('dynamodbEndpoint', dynamo.endpoint);
  const runId = testRunId();
  project.provide('testRunId', runId);
  return async () => {
    await dynamo.stop();
    rmSync(sharedBundlesRoot(runId), { recursive: true, force: true });
  };
}

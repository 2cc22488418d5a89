import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal } from '../../infra/local/dynamodb';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
  }
}

/** One DynamoDB Local (one JVM) for the whole run; each test file uses its own tables. */
export default async function setup(project: TestProject) {
  const dynamo = await startDynamoDbLocal(null);
  project.provide('dynamodbEndpoint', dynamo.endpoint);
  return async () => {
    await dynamo.stop();
  };
}

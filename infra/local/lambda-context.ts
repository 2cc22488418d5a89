import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';

/** The function a local invocation stands for. */
export interface LocalFunction {
  functionName: string;
  /** The function's timeout: `getRemainingTimeInMillis` counts down from it. */
  timeoutSeconds: number;
  memoryMb: number;
  region: string;
  accountId: string;
}

/**
 * The `context` Lambda hands a handler, for one invocation by the local runtime (API
 * handlers, queue consumers, Step Functions tasks): its clock starts now, and it carries a
 * fresh request id.
 */
export function lambdaContext(fn: LocalFunction): Context {
  const started = Date.now();
  return {
    functionName: fn.functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${fn.region}:${fn.accountId}:function:${fn.functionName}`,
    memoryLimitInMB: String(fn.memoryMb),
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${fn.functionName}`,
    logStreamName: 'local',
    callbackWaitsForEmptyEventLoop: false,
    getRemainingTimeInMillis: () => Math.max(0, fn.timeoutSeconds * 1000 - (Date.now() - started)),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

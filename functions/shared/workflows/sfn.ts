import {
  DescribeExecutionCommand,
  SendTaskFailureCommand,
  SendTaskHeartbeatCommand,
  SendTaskSuccessCommand,
  SFNClient,
  StartExecutionCommand,
  StopExecutionCommand,
} from '@aws-sdk/client-sfn';
import { config } from '../config';

/**
 * Step Functions calls of the API functions and queue consumers (never of task workers:
 * a task worker that referenced its own machine would be a CDK dependency cycle). One
 * client per container; the endpoint comes from the SDK's own settings
 * (AWS_ENDPOINT_URL_SFN points at infra/local/stepfunctions/ locally).
 */
const client = new SFNClient({ region: config().region, maxAttempts: 3 });

const errorName = (err: unknown) => (err as { name?: string } | undefined)?.name;

/** Execution ARN from the machine ARN and the execution name (AWS's fixed layout). */
export function executionArn(stateMachineArn: string, name: string): string {
  const parts = stateMachineArn.split(':');
  if (parts.length < 7 || parts[5] !== 'stateMachine') throw new Error(`Not a state machine ARN: ${stateMachineArn}`);
  return [...parts.slice(0, 5), 'execution', parts[6], name].join(':');
}

export interface Started {
  executionArn: string;
  /** False when an execution of that name already existed (a redelivered start). */
  created: boolean;
}

/**
 * Start an execution named after the resource it drives (job id, run id), so a duplicate
 * start is harmless: AWS answers a running same-name, same-input execution with the
 * original, and refuses any other reuse with ExecutionAlreadyExists, which is treated as
 * "already started" here.
 */
export async function startExecution(stateMachineArn: string, name: string, input: unknown): Promise<Started> {
  try {
    const out = await client.send(new StartExecutionCommand({ stateMachineArn, name, input: JSON.stringify(input) }));
    return { executionArn: out.executionArn!, created: true };
  } catch (err) {
    if (errorName(err) === 'ExecutionAlreadyExists') return { executionArn: executionArn(stateMachineArn, name), created: false };
    throw err;
  }
}

/** Stop an execution; false when it does not exist or has already ended. */
export async function stopExecution(arn: string, error: string, cause: string): Promise<boolean> {
  try {
    const current = await client.send(new DescribeExecutionCommand({ executionArn: arn }));
    if (current.status !== 'RUNNING') return false;
    await client.send(new StopExecutionCommand({ executionArn: arn, error, cause }));
    return true;
  } catch (err) {
    if (errorName(err) === 'ExecutionDoesNotExist') return false;
    throw err;
  }
}

/** An execution's status (RUNNING, SUCCEEDED, FAILED, TIMED_OUT, ABORTED, ...); undefined when it does not exist. */
export async function executionStatus(arn: string): Promise<string | undefined> {
  try {
    return (await client.send(new DescribeExecutionCommand({ executionArn: arn }))).status;
  } catch (err) {
    if (errorName(err) === 'ExecutionDoesNotExist') return undefined;
    throw err;
  }
}

export async function describeExecution(arn: string) {
  return client.send(new DescribeExecutionCommand({ executionArn: arn }));
}

/** Task-token answers; false when the token is unknown or its task has already closed. */
const CLOSED_TOKEN = new Set(['TaskDoesNotExist', 'TaskTimedOut', 'InvalidToken']);

export async function sendTaskSuccess(taskToken: string, output: unknown): Promise<boolean> {
  try {
    await client.send(new SendTaskSuccessCommand({ taskToken, output: JSON.stringify(output) }));
    return true;
  } catch (err) {
    if (CLOSED_TOKEN.has(errorName(err) ?? '')) return false;
    throw err;
  }
}

export async function sendTaskFailure(taskToken: string, error: string, cause: string): Promise<boolean> {
  try {
    await client.send(new SendTaskFailureCommand({ taskToken, error, cause }));
    return true;
  } catch (err) {
    if (CLOSED_TOKEN.has(errorName(err) ?? '')) return false;
    throw err;
  }
}

export async function sendTaskHeartbeat(taskToken: string): Promise<boolean> {
  try {
    await client.send(new SendTaskHeartbeatCommand({ taskToken }));
    return true;
  } catch (err) {
    if (CLOSED_TOKEN.has(errorName(err) ?? '')) return false;
    throw err;
  }
}

import { randomUUID } from 'node:crypto';
import { AwsJsonError } from '../aws-json-server';
import type { Executions } from './executions';
import type { LocalMachine } from './machines';
import type { TaskTokens } from './task-tokens';

/** AWS's rule for execution names. */
const NAME = /^[^\s<>{}[\]?*"#%\\^|~`$&,;:/\u0000-\u001f\u007f-\u009f]{1,80}$/;

const epoch = (d: Date | undefined) => (d ? d.getTime() / 1000 : undefined);

/**
 * The Step Functions operations the production code calls (@aws-sdk/client-sfn), answered
 * as AWS answers them, errors included. Execution names are idempotency keys as in AWS: a
 * RUNNING execution started again with the same name and input is returned as is; any
 * other reuse is ExecutionAlreadyExists.
 */
export function stepFunctionsApi(machines: ReadonlyMap<string, LocalMachine>, executions: Executions, tokens: TaskTokens) {
  const execution = (arn: unknown) => {
    const exec = executions.get(String(arn ?? ''));
    if (!exec) throw new AwsJsonError('ExecutionDoesNotExist', `Execution Does Not Exist: '${String(arn)}'`);
    return exec;
  };

  return {
    StartExecution(input: Record<string, unknown>) {
      const machine = machines.get(String(input.stateMachineArn ?? ''));
      if (!machine) throw new AwsJsonError('StateMachineDoesNotExist', `State Machine Does Not Exist: '${String(input.stateMachineArn)}'`);
      const name = input.name === undefined ? randomUUID() : String(input.name);
      if (!NAME.test(name)) throw new AwsJsonError('InvalidName', `Invalid Name: '${name}'`);
      const text = input.input === undefined ? '{}' : String(input.input);
      try {
        JSON.parse(text);
      } catch {
        throw new AwsJsonError('InvalidExecutionInput', 'Invalid execution input: not JSON');
      }
      const arn = executions.arnOf(machine, name);
      const existing = executions.get(arn);
      if (existing) {
        if (existing.status === 'RUNNING' && existing.input === text) return { executionArn: arn, startDate: epoch(existing.startDate) };
        throw new AwsJsonError('ExecutionAlreadyExists', `Execution Already Exists: '${arn}'`);
      }
      const exec = executions.start(machine, name, text);
      return { executionArn: exec.arn, startDate: epoch(exec.startDate) };
    },

    DescribeExecution(input: Record<string, unknown>) {
      const exec = execution(input.executionArn);
      return {
        executionArn: exec.arn,
        stateMachineArn: exec.machine.arn,
        name: exec.name,
        status: exec.status,
        startDate: epoch(exec.startDate),
        stopDate: epoch(exec.stopDate),
        input: exec.input,
        output: exec.output,
        error: exec.error,
        cause: exec.cause,
      };
    },

    async StopExecution(input: Record<string, unknown>) {
      const exec = execution(input.executionArn);
      await executions.stop(exec, {
        ...(input.error !== undefined ? { error: String(input.error) } : {}),
        ...(input.cause !== undefined ? { cause: String(input.cause) } : {}),
      });
      return { stopDate: epoch(exec.stopDate) };
    },

    SendTaskSuccess(input: Record<string, unknown>) {
      tokens.assertOpen(input.taskToken);
      let output: unknown;
      try {
        output = JSON.parse(String(input.output ?? 'null'));
      } catch {
        throw new AwsJsonError('InvalidOutput', 'Invalid output: not JSON');
      }
      tokens.succeed(input.taskToken, output);
      return {};
    },

    SendTaskFailure(input: Record<string, unknown>) {
      const err = new Error(input.cause === undefined ? '' : String(input.cause));
      err.name = input.error === undefined ? 'States.TaskFailed' : String(input.error);
      tokens.fail(input.taskToken, err);
      return {};
    },

    SendTaskHeartbeat(input: Record<string, unknown>) {
      tokens.assertOpen(input.taskToken);
      return {};
    },
  };
}

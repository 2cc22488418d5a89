import { DescribeExecutionCommand, SFNClient } from '@aws-sdk/client-sfn';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { RunShape, RunStepShape } from '../contract/assistants-shapes';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { call, startTestGateway } from '../support/gateway';

// The tool-output wait of the runs state machine times out -> `expired`. The wait lasts
// RUN_TOOL_OUTPUT_TIMEOUT_SECONDS (functions/shared/config.ts, default 600): the runs
// definition (infra/workflows/runs.ts) reads it when it is built, which for the local
// runtime is start-up, after `env` is applied; in AWS it is synth time. This file's gateway
// sets it to 2 s (its own process, so no other test sees the short wait). No functions/
// module is imported statically: the gateway sets the environment before they load.
const WAIT_SECONDS = 2;
let gw: LocalGateway;
let fake: FakeServer;
let sfn: SFNClient;

beforeAll(async () => {
  fake = await startOpenAIFake();
  gw = await startTestGateway({ workflowMaxWaitMs: 50, env: { AUTH_CACHE_TTL_MS: '0', RUN_TOOL_OUTPUT_TIMEOUT_SECONDS: String(WAIT_SECONDS) } });
  const created = await call(gw, 'POST', '/v1/providers', {
    body: { slug: 'exp-openai', provider: 'openai', api_key: 'sk-managed', custom_host: `${fake.url}/v1` },
  });
  expect(created.status, created.text).toBe(200);
  sfn = new SFNClient({ region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, endpoint: gw.stepFunctions.endpoint });
});
afterAll(async () => {
  sfn?.destroy();
  await gw?.stop();
  await fake?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await check())) await sleep(50);
}
const POLL = { pollIntervalMs: 25 };
const weather = { type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { location: { type: 'string' } } } } };

describe('tool outputs that never arrive', () => {
  it('builds the wait from RUN_TOOL_OUTPUT_TIMEOUT_SECONDS', async () => {
    const { STATE_MACHINES } = await import('../../infra/workflows/registry');
    const wait = STATE_MACHINES.find((m) => m.name === 'runs')!.definition().States.WaitForToolOutputs!;
    expect(wait).toMatchObject({ Type: 'Task', TimeoutSeconds: WAIT_SECONDS, Parameters: { Payload: { timeoutSeconds: WAIT_SECONDS } } });
  });

  it('expires a run left in requires_action: expires_at says when, the tool step expires, the thread is freed', async () => {
    const sdk = new OpenAI({
      baseURL: gw.baseUrl,
      apiKey: 'unused',
      maxRetries: 0,
      defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': '@exp-openai' },
    });
    const assistant = await sdk.beta.assistants.create({ model: 'gpt-4o-mini', tools: [weather] });
    const thread = await sdk.beta.threads.create({ messages: [{ role: 'user', content: 'What is the weather in Lisbon?' }] });
    const waiting = await sdk.beta.threads.runs.createAndPoll(thread.id, { assistant_id: assistant.id }, POLL);
    expect(waiting.status).toBe('requires_action');

    // The wait stores its token and moves expires_at to its own end (created_at + 600 before).
    let run = waiting;
    await until(async () => {
      run = await sdk.beta.threads.runs.retrieve(waiting.id, { thread_id: thread.id });
      return run.status !== 'requires_action' || run.expires_at !== waiting.created_at + 600;
    });
    if (run.status === 'requires_action') {
      expect(run.expires_at).toBeGreaterThanOrEqual(waiting.created_at + WAIT_SECONDS);
      expect(run.expires_at).toBeLessThan(waiting.created_at + 600);
    }

    await until(async () => (run = await sdk.beta.threads.runs.retrieve(waiting.id, { thread_id: thread.id })).status !== 'requires_action');
    RunShape.parse(run);
    expect(run).toMatchObject({ status: 'expired', required_action: null, expires_at: null, last_error: null });
    const steps = (await sdk.beta.threads.runs.steps.list(run.id, { thread_id: thread.id })).data;
    steps.forEach((s) => RunStepShape.parse(s));
    expect(steps.map((s) => [s.type, s.status])).toEqual([['tool_calls', 'expired']]);
    // MarkExpired ended the execution normally.
    await until(async () => (await sfn.send(new DescribeExecutionCommand({ executionArn: executionArn(run.id) }))).status !== 'RUNNING');
    expect((await sfn.send(new DescribeExecutionCommand({ executionArn: executionArn(run.id) }))).status).toBe('SUCCEEDED');

    // Too late for outputs; the thread takes a new run.
    const callId = waiting.required_action!.submit_tool_outputs.tool_calls[0]!.id;
    const late = await sdk.beta.threads.runs
      .submitToolOutputs(run.id, { thread_id: thread.id, tool_outputs: [{ tool_call_id: callId, output: 'x' }] })
      .catch((e: InstanceType<typeof OpenAI.APIError>) => e);
    expect(late).toBeInstanceOf(OpenAI.BadRequestError);
    await sdk.beta.threads.messages.create(thread.id, { role: 'user', content: 'Never mind, say hi' });
    expect((await sdk.beta.threads.runs.createAndPoll(thread.id, { assistant_id: assistant.id }, POLL)).status).toBe('completed');
  });
});

const executionArn = (runId: string) => `${gw.stepFunctions.arns.runs!.replace(':stateMachine:', ':execution:')}:${runId}`;

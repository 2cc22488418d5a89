import { DescribeExecutionCommand, SFNClient } from '@aws-sdk/client-sfn';
import OpenAI from 'openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startFineTuningFake, type FineTuningFake } from '../fakes/fine-tuning';
import { call, startTestGateway } from '../support/gateway';

// A job that trains for 300 polls, on a local Step Functions that fails any execution whose
// history passes 450 events, as AWS fails one at 25,000 (test/unit/local-workflows shows the
// limit biting): the limit is scaled down with the polls, since each poll is real I/O (the
// fake provider, DynamoDB). One execution would need ~2,700 events; continuing in a new
// execution every 40 polls (~360 events) keeps each under the limit.
const POLLS_RUNNING = 300;
const POLLS_PER_EXECUTION = 40;

let gw: LocalGateway;
let fake: FineTuningFake;
let sfn: SFNClient;

beforeAll(async () => {
  fake = await startFineTuningFake({ apiKey: 'sk-ft-long' });
  fake.setScript('ft-long', ['validating_files', 'queued', ...Array<'running'>(POLLS_RUNNING).fill('running'), 'succeeded']);
  gw = await startTestGateway({
    workflowMaxWaitMs: 1,
    workflowHistoryLimit: 450,
    env: { FINE_TUNING_POLL_SECONDS: '1', FINE_TUNING_POLLS_PER_EXECUTION: String(POLLS_PER_EXECUTION) },
  });
  const created = await call(gw, 'POST', '/v1/providers', { body: { slug: 'ft', provider: 'openai', api_key: 'sk-ft-long', custom_host: `${fake.url}/v1` } });
  expect(created.status, created.text).toBe(200);
  sfn = new SFNClient({ region: 'us-east-1', endpoint: process.env.AWS_ENDPOINT_URL_SFN, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
});

afterAll(async () => {
  sfn?.destroy();
  await gw?.stop();
  await fake?.close();
});

it('survives past the execution history limit: each execution hands the job on to the next', { timeout: 600_000 }, async () => {
  const client = new OpenAI({
    baseURL: gw.baseUrl,
    apiKey: 'unused',
    maxRetries: 0,
    defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': '@ft' },
  });
  const job = await client.fineTuning.jobs.create({ model: 'gpt-4o-mini-ft-long', training_file: fake.addFile({ filename: 'train.jsonl' }) });
  let current = job;
  while (!['succeeded', 'failed', 'cancelled'].includes(current.status)) {
    await new Promise((r) => setTimeout(r, 250));
    current = await client.fineTuning.jobs.retrieve(job.id);
  }
  expect(current.status, JSON.stringify(current.error)).toBe('succeeded');
  const upstream = [...fake.jobs.values()].find((j) => j.model === 'gpt-4o-mini-ft-long')!;
  expect(upstream.retrieves).toBeGreaterThan(POLLS_RUNNING);

  // The executions: <id>, <id>--2, ... each SUCCEEDED (handed on) under the limit.
  const machine = process.env.FINE_TUNING_STATE_MACHINE_ARN!.replace(':stateMachine:', ':execution:');
  const expected = Math.ceil(upstream.retrieves / POLLS_PER_EXECUTION);
  const statuses: string[] = [];
  for (let n = 1; ; n++) {
    const name = n === 1 ? job.id : `${job.id}--${n}`;
    const d = await sfn.send(new DescribeExecutionCommand({ executionArn: `${machine}:${name}` })).catch(() => undefined);
    if (!d) break;
    statuses.push(d.status!);
  }
  expect(statuses.length).toBeGreaterThanOrEqual(expected - 1);
  expect(statuses.length).toBeLessThanOrEqual(expected + 1);
  expect(new Set(statuses)).toEqual(new Set(['SUCCEEDED']));
});

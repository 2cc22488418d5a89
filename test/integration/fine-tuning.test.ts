import { DescribeExecutionCommand, SFNClient, StopExecutionCommand } from '@aws-sdk/client-sfn';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import type { LocalGateway } from '../../infra/local/server';
import { FAKE_JOB_ERROR, startFineTuningFake, type FineTuningFake } from '../fakes/fine-tuning';
import { call, errorOf, startTestGateway } from '../support/gateway';

// No functions/ module is imported statically: the gateway sets the environment first.
// Workflows run on the local Step Functions with Wait states capped at 50 ms, so the
// fake provider is polled quickly; its jobs advance one status per poll.
let gw: LocalGateway;
let fake: FineTuningFake;
let trainingFile: string;
/** Another workspace of the same organisation, with its own key and managed provider. */
let other: { workspaceId: string; key: string };

const PROVIDER_KEY = 'sk-ft-provider-secret-0123456789';

beforeAll(async () => {
  fake = await startFineTuningFake({ apiKey: PROVIDER_KEY });
  trainingFile = fake.addFile({ filename: 'train.jsonl' });
  gw = await startTestGateway({ workflowMaxWaitMs: 50, env: { FINE_TUNING_POLL_SECONDS: '1' } });
  for (const body of [
    { slug: 'ft-openai', provider: 'openai', api_key: PROVIDER_KEY, custom_host: `${fake.url}/v1` },
    { slug: 'claude', provider: 'anthropic', api_key: 'sk-ant-unused' },
  ]) {
    const created = await call(gw, 'POST', '/v1/providers', { body });
    expect(created.status, created.text).toBe(200);
  }
  const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: 'Fine-tuning other team' } });
  expect(ws.status, ws.text).toBe(200);
  const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'other', workspace_id: ws.body.id, scopes: ['admin', 'gateway'] } });
  expect(key.status, key.text).toBe(200);
  other = { workspaceId: ws.body.id, key: key.body.secret };
  const otherProvider = await call(gw, 'POST', '/v1/providers', {
    key: other.key,
    body: { slug: 'ft-openai', provider: 'openai', api_key: PROVIDER_KEY, custom_host: `${fake.url}/v1` },
  });
  expect(otherProvider.status, otherProvider.text).toBe(200);
});

afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

function client(key = gw.adminKey, provider = '@ft-openai') {
  return new OpenAI({
    baseURL: gw.baseUrl,
    apiKey: 'unused-managed-provider',
    maxRetries: 0,
    defaultHeaders: { 'x-gateway-api-key': key, 'x-gateway-provider': provider },
  });
}

// ---- as a schema ------------------------------------------------------------------------

const STATUSES = ['validating_files', 'queued', 'running', 'succeeded', 'failed', 'cancelled'] as const;
const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);
const autoOrInt = z.union([z.literal('auto'), z.int()]);

const jobSchema = z
  .object({
    id: z.string().regex(/^ftjob-[0-9a-z]{26}$/),
    created_at: z.int(),
    error: z.object({ code: z.string(), message: z.string(), param: z.string() }),
    fine_tuned_model: z.string().nullable(),
    finished_at: z.int().nullable(),
    hyperparameters: z.looseObject({ n_epochs: autoOrInt }),
    model: z.string(),
    object: z.literal('fine_tuning.job'),
    organization_id: z.string(),
    result_files: z.array(z.string()),
    status: z.enum(STATUSES),
    trained_tokens: z.int().nullable(),
    training_file: z.string(),
    validation_file: z.string().nullable(),
    seed: z.int(),
    integrations: z
      .array(
        z.object({
          type: z.literal('wandb'),
          wandb: z.object({ project: z.string(), name: z.string().nullish(), entity: z.string().nullish(), tags: z.array(z.string()).optional() }),
        }),
      )
      .max(5)
      .nullable(),
    estimated_finish: z.int().nullable(),
  })
  .superRefine((job, ctx) => {
    const terminal = TERMINAL.has(job.status);
    const rule = (ok: boolean, message: string) => ok || ctx.addIssue({ code: 'custom', message });
    rule(terminal === (job.finished_at !== null), 'finished_at is set exactly when the job is terminal');
    rule(job.status === 'succeeded' || job.fine_tuned_model === null, 'fine_tuned_model is null unless succeeded');
    rule(terminal || job.trained_tokens === null, 'trained_tokens is null while running');
    rule(job.status === 'running' || job.estimated_finish === null, 'estimated_finish is null unless running');
    const filled = job.error.code !== '' && job.error.message !== '';
    rule(job.status === 'failed' ? filled : job.error.code === '' && job.error.message === '', 'error is filled exactly for failed jobs');
  });

const eventSchema = z.object({
  object: z.literal('fine_tuning.job.event'),
  id: z.string().regex(/^ftevent-/),
  created_at: z.int(),
  level: z.enum(['info', 'warn', 'error']),
  message: z.string(),
  type: z.enum(['message', 'metrics']),
  data: z.record(z.string(), z.unknown()).nullable(),
});

function valid(job: unknown) {
  const parsed = jobSchema.safeParse(job);
  if (!parsed.success) throw new Error(`not a job: ${parsed.error.message}\n${JSON.stringify(job)}`);
  return parsed.data;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Retrieve until `until` holds (the test's own timeout bounds the wait); every read is validated. */
async function waitForJob(id: string, until: (job: z.infer<typeof jobSchema>) => boolean, seen?: string[]) {
  for (;;) {
    const job = valid(await client().fineTuning.jobs.retrieve(id));
    if (seen && seen.at(-1) !== job.status) seen.push(job.status);
    if (until(job)) return job;
    await sleep(20);
  }
}

async function waitFor(check: () => boolean | Promise<boolean>) {
  while (!(await check())) await sleep(20);
}

async function allEvents(id: string) {
  const events = [];
  for await (const e of client().fineTuning.jobs.listEvents(id, { limit: 3 })) events.push(eventSchema.parse(e));
  return events;
}

/** The fake's job for a gateway job (found through the model name each test makes unique). */
const providerJob = (model: string) => [...fake.jobs.values()].find((j) => j.model === model);

// ---- lifecycle -------------------------------------------------------------------------------

describe('fine-tuning lifecycle through the OpenAI SDK', () => {
  it('goes validating_files -> running -> succeeded, mirroring the provider, with events', async () => {
    const model = 'gpt-4o-mini-ft-hold-running-ok';
    const created = valid(await client().fineTuning.jobs.create({ model, training_file: trainingFile, suffix: 'support-bot', metadata: { team: 'support' } }));
    expect(created).toMatchObject({
      status: 'validating_files',
      model,
      training_file: trainingFile,
      validation_file: null,
      organization_id: gw.organisationId,
      hyperparameters: { n_epochs: 'auto', batch_size: 'auto', learning_rate_multiplier: 'auto' },
      integrations: null,
      result_files: [],
    });
    expect(Number.isInteger(created.seed)).toBe(true);

    const seen: string[] = [created.status];
    const running = await waitForJob(created.id, (j) => j.status === 'running', seen);
    expect(running.estimated_finish).toEqual(expect.any(Number));
    expect(running).toMatchObject({ fine_tuned_model: null, finished_at: null, trained_tokens: null, seed: created.seed });
    // The provider got the job as OpenAI expects it, with the stored seed and the suffix.
    const upstream = providerJob(model)!;
    expect(upstream.body).toMatchObject({ model, training_file: trainingFile, suffix: 'support-bot', seed: created.seed, method: { type: 'supervised' } });
    expect(fake.last()?.headers.authorization).toBe(`Bearer ${PROVIDER_KEY}`);

    // Progress is mirrored while it runs (the fake reports metrics at each poll) ...
    await waitFor(async () => (await allEvents(created.id)).some((e) => e.type === 'metrics'));
    upstream.script.push('succeeded'); // ... and the provider finishes at its next poll
    const done = await waitForJob(created.id, (j) => TERMINAL.has(j.status), seen);
    expect(done.status).toBe('succeeded');
    expect(done.fine_tuned_model).toBe(`ft:${model}:fake-org:support-bot:${upstream.id.slice(-8)}`);
    expect(done.trained_tokens).toBe(12345);
    expect(done.result_files).toEqual([`file-result-${upstream.id.slice(-8)}`]);
    expect(done.finished_at).toBeGreaterThanOrEqual(created.created_at);
    expect(done.hyperparameters).toMatchObject({ n_epochs: 3, batch_size: 1, learning_rate_multiplier: 2 });
    expect(seen[0]).toBe('validating_files');
    expect(seen).toContain('running');
    expect(seen.at(-1)).toBe('succeeded');
    expect(seen.indexOf('running')).toBeLessThan(seen.indexOf('succeeded'));

    // Events: the gateway's own and the provider's, newest first, auto-paginated. The
    // worker writes the closing events after the status (only the write that wins the
    // status change writes them), so a reader can see `succeeded` a moment before them.
    await waitFor(async () => (await allEvents(done.id)).some((e) => e.message === 'The job has successfully completed.'));
    const events = await allEvents(done.id);
    const messages = events.map((e) => e.message);
    expect(messages[0]).toBe('The job has successfully completed.');
    for (const text of [
      `Created fine-tuning job: ${done.id}`,
      'Files validated, submitting the job to the provider.',
      `Submitted to OpenAI as job ${upstream.id}.`,
      'Fine-tuning job started.',
      `New fine-tuned model created: ${done.fine_tuned_model}`,
    ]) {
      expect(messages).toContain(text);
    }
    expect(
      events.some((e) => e.type === 'metrics' && /training loss/.test(e.message)),
      JSON.stringify(events.map((e) => [e.type, e.message])),
    ).toBe(true);
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    for (let i = 1; i < events.length; i++) expect(events[i - 1]!.id > events[i]!.id).toBe(true);
    // Nothing changes a terminal job afterwards.
    await waitFor(() => gw.stepFunctions.running() === 0);
    expect(valid(await client().fineTuning.jobs.retrieve(done.id))).toEqual(done);
  });

  it('fails with the provider error filled in', async () => {
    const model = 'gpt-4o-mini-ft-fail';
    const created = valid(await client().fineTuning.jobs.create({ model, training_file: trainingFile }));
    const failed = await waitForJob(created.id, (j) => TERMINAL.has(j.status));
    expect(failed.status).toBe('failed');
    expect(failed.error).toEqual(FAKE_JOB_ERROR);
    expect(failed.fine_tuned_model).toBeNull();
    expect(failed.finished_at).toEqual(expect.any(Number));
    // The closing event is written just after the status (see the succeeded case).
    await waitFor(async () => (await allEvents(failed.id)).some((e) => e.level === 'error'));
    const events = await allEvents(failed.id);
    expect(events[0]).toMatchObject({ level: 'error', message: `The job failed: ${FAKE_JOB_ERROR.message}` });
  });

  it('fails in validating_files when the training file does not exist at the provider', async () => {
    const model = 'gpt-4o-mini-missing-file';
    const creates = fake.count((r) => r.method === 'POST' && r.path.endsWith('/fine_tuning/jobs'));
    const created = valid(await client().fineTuning.jobs.create({ model, training_file: 'file-does-not-exist' }));
    const failed = await waitForJob(created.id, (j) => TERMINAL.has(j.status));
    expect(failed.status).toBe('failed');
    expect(failed.error.code).toBe('invalid_training_file');
    expect(failed.error.param).toBe('training_file');
    expect(failed.error.message).toContain("'file-does-not-exist' was not found at OpenAI");
    // It never reached the provider's jobs API.
    expect(fake.count((r) => r.method === 'POST' && r.path.endsWith('/fine_tuning/jobs'))).toBe(creates);
    await waitFor(async () => (await allEvents(failed.id)).some((e) => e.message.includes('was not found at OpenAI')));
    const messages = (await allEvents(failed.id)).map((e) => e.message);
    expect(messages.some((m) => m.startsWith('Submitted'))).toBe(false);
    expect(messages[0]).toContain('was not found at OpenAI');
  });

  it('fails the validation file the same way, naming it', async () => {
    const created = valid(
      await client().fineTuning.jobs.create({ model: 'gpt-4o-mini-missing-validation', training_file: trainingFile, validation_file: 'file-nope' }),
    );
    const failed = await waitForJob(created.id, (j) => TERMINAL.has(j.status));
    expect(failed).toMatchObject({ status: 'failed', validation_file: 'file-nope', error: { code: 'invalid_validation_file', param: 'validation_file' } });
  });

  it.each([
    ['queued', 'gpt-4o-mini-ft-hold-queued-cancel'],
    ['running', 'gpt-4o-mini-ft-hold-running-cancel'],
  ])('cancels a job while it is %s: the provider job is cancelled at the next poll', async (status, model) => {
    const created = valid(await client().fineTuning.jobs.create({ model, training_file: trainingFile }));
    await waitForJob(created.id, (j) => j.status === status);
    const cancelled = valid(await client().fineTuning.jobs.cancel(created.id));
    expect(cancelled).toMatchObject({ id: created.id, status: 'cancelled', estimated_finish: null, fine_tuned_model: null });
    expect(cancelled.finished_at).toEqual(expect.any(Number));

    await waitFor(() => providerJob(model)?.cancelled === true);
    await waitFor(async () => (await allEvents(created.id)).some((e) => e.message.startsWith('Cancelled the provider job')));
    // Terminal: it stays cancelled, and a second cancel is a 409 with a clear message.
    expect(valid(await client().fineTuning.jobs.retrieve(created.id))).toEqual(cancelled);
    const again = await client()
      .fineTuning.jobs.cancel(created.id)
      .catch((e: unknown) => e);
    expect(again).toBeInstanceOf(OpenAI.ConflictError);
    expect((again as InstanceType<typeof OpenAI.ConflictError>).message).toContain('is already cancelled');
  });

  it('cancels a job before it reached the provider and stops its execution (hard stop)', async () => {
    const model = 'gpt-4o-mini-cancel-early';
    const sfn = new SFNClient({ region: 'us-east-1', endpoint: gw.stepFunctions.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    const describe = (id: string) =>
      sfn
        .send(new DescribeExecutionCommand({ executionArn: `${gw.stepFunctions.arns['fine-tuning']!.replace(':stateMachine:', ':execution:')}:${id}` }))
        .catch(() => undefined);
    // The provider holds the file check: the job is in validating_files, inside the Validate task.
    const held = fake.hold((r) => r.method === 'GET' && r.path.includes('/files/'));
    try {
      const created = valid(await client().fineTuning.jobs.create({ model, training_file: trainingFile }));
      await waitFor(() => held.held() > 0);
      expect((await describe(created.id))?.status).toBe('RUNNING');
      const cancelled = valid(await client().fineTuning.jobs.cancel(created.id));
      expect(cancelled.status).toBe('cancelled');
      const execution = await describe(created.id);
      expect(execution).toMatchObject({ status: 'ABORTED', error: 'JobCancelled' });
      held.release();
      // The file check that was under way ends without touching the cancelled job.
      await waitFor(() => held.held() === 0);
      expect(valid(await client().fineTuning.jobs.retrieve(created.id))).toEqual(cancelled);
    } finally {
      held.release();
      sfn.destroy();
    }
    expect(providerJob(model)).toBeUndefined();
  });

  it('refuses to cancel a finished job with a 409 the SDKs do not retry (x-should-retry: false)', async () => {
    const created = valid(await client().fineTuning.jobs.create({ model: 'gpt-4o-mini-ft-fail-409', training_file: trainingFile }));
    await waitForJob(created.id, (j) => TERMINAL.has(j.status));
    const res = await call(gw, 'POST', `/v1/fine_tuning/jobs/${created.id}/cancel`);
    expect(res.status).toBe(409);
    expect(errorOf(res)).toMatchObject({ type: 'conflict_error', code: 'job_not_cancellable' });
    expect(errorOf(res).message).toContain(`${created.id} is already failed`);
    expect(res.headers.get('x-should-retry')).toBe('false');
  });
});

describe('provider failures and the workflow safety nets', () => {
  const sfnClient = () =>
    new SFNClient({ region: 'us-east-1', endpoint: gw.stepFunctions.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  const executionArn = (id: string) => `${gw.stepFunctions.arns['fine-tuning']!.replace(':stateMachine:', ':execution:')}:${id}`;

  it('retries a provider that answers 503 for a while, then carries on', async () => {
    const model = 'gpt-4o-mini-ft-hold-queued-flaky';
    const created = valid(await client().fineTuning.jobs.create({ model, training_file: trainingFile }));
    await waitForJob(created.id, (j) => j.status === 'queued');
    const before = fake.count();
    fake.setBehaviour({ status: 503, times: 3 });
    await waitFor(() => fake.count() >= before + 4); // three refusals, then a poll that works
    providerJob(model)!.script.push('running', 'succeeded');
    const done = await waitForJob(created.id, (j) => TERMINAL.has(j.status));
    expect(done.status).toBe('succeeded');
  });

  it('a submit retried after the provider created the job but lost its answer takes that job: no second one', async () => {
    const model = 'gpt-4o-mini-lost-create-answer';
    fake.loseNextCreateAnswer();
    const created = valid(await client().fineTuning.jobs.create({ model, training_file: trainingFile }));
    const done = await waitForJob(created.id, (j) => TERMINAL.has(j.status));
    expect(done.status).toBe('succeeded');
    const atProvider = [...fake.jobs.values()].filter((j) => j.model === model);
    expect(atProvider).toHaveLength(1);
    expect(fake.count((r) => r.method === 'POST' && r.path.endsWith('/fine_tuning/jobs'))).toBeGreaterThanOrEqual(1);
    expect(fake.count((r) => r.method === 'GET' && r.query['metadata[gateway_job_id]'] === created.id)).toBe(1);
    expect(done.fine_tuned_model).toContain(atProvider[0]!.id.slice(-8));
  });

  it('fails the job with a clear error when the provider stays unavailable', async () => {
    const model = 'gpt-4o-mini-ft-hold-queued-down';
    const created = valid(await client().fineTuning.jobs.create({ model, training_file: trainingFile }));
    await waitForJob(created.id, (j) => j.status === 'queued');
    fake.setBehaviour({ status: 500 });
    try {
      const failed = await waitForJob(created.id, (j) => TERMINAL.has(j.status));
      expect(failed.status).toBe('failed');
      expect(failed.error.code).toBe('workflow_error');
      expect(failed.error.message).toMatch(/ProviderUnavailable: OpenAI answered HTTP 500/);
    } finally {
      fake.setBehaviour({ status: undefined });
    }
    // The job is written failed by the execution's last task; the execution ends just after.
    const sfn = sfnClient();
    let execution = await sfn.send(new DescribeExecutionCommand({ executionArn: executionArn(created.id) }));
    for (let i = 0; i < 200 && execution.status === 'RUNNING'; i++) {
      await sleep(20);
      execution = await sfn.send(new DescribeExecutionCommand({ executionArn: executionArn(created.id) }));
    }
    sfn.destroy();
    expect(execution).toMatchObject({ status: 'FAILED', error: 'FineTuningWorkflowError' });
  });

  it("fails at once, in the provider's words, when the provider refuses the credentials", async () => {
    const created = await call(gw, 'POST', '/v1/providers', {
      body: { slug: 'ft-badkey', provider: 'openai', api_key: 'sk-wrong', custom_host: `${fake.url}/v1` },
    });
    expect(created.status).toBe(200);
    const job = valid(await client(gw.adminKey, '@ft-badkey').fineTuning.jobs.create({ model: 'gpt-4o-mini-badkey', training_file: trainingFile }));
    const failed = await waitForJob(job.id, (j) => TERMINAL.has(j.status));
    expect(failed.error).toMatchObject({ code: 'invalid_api_key' });
    expect(failed.error.message).toMatch(/^OpenAI refused the request \(HTTP 401\): Incorrect API key provided/);
    expect(failed.error.message).not.toContain('sk-wrong');
  });

  it('fails a job whose execution was stopped from outside (finalizer)', async () => {
    const created = valid(await client().fineTuning.jobs.create({ model: 'gpt-4o-mini-ft-hold-queued-stopped', training_file: trainingFile }));
    await waitForJob(created.id, (j) => j.status === 'queued');
    const sfn = sfnClient();
    await sfn.send(new StopExecutionCommand({ executionArn: executionArn(created.id), error: 'Operator', cause: 'stopped in the console' }));
    sfn.destroy();
    const failed = await waitForJob(created.id, (j) => TERMINAL.has(j.status));
    expect(failed.error).toMatchObject({ code: 'workflow_stopped', param: '' });
    expect(failed.error.message).toContain('stopped in the console');
  });
});

// ---- validation ------------------------------------------------------------------------------

describe('create: validation and credentials', () => {
  const wandb = (i: number) => ({ type: 'wandb' as const, wandb: { project: `p${i}` } });

  it('accepts up to 5 integrations and refuses 6 with a 400 naming the field', async () => {
    const five = valid(
      await client().fineTuning.jobs.create({ model: 'gpt-4o-mini-five-integrations', training_file: trainingFile, integrations: [1, 2, 3, 4, 5].map(wandb) }),
    );
    expect(five.integrations).toHaveLength(5);
    const err = await client()
      .fineTuning.jobs.create({ model: 'gpt-4o-mini', training_file: trainingFile, integrations: [1, 2, 3, 4, 5, 6].map(wandb) })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const e = err as InstanceType<typeof OpenAI.BadRequestError>;
    expect(e.param).toBe('integrations');
    expect(e.message).toMatch(/integrations/);
  });

  it('400s for missing fields, unknown fields and bad hyperparameters', async () => {
    const cases: Array<[unknown, string]> = [
      [{ training_file: trainingFile }, 'model'],
      [{ model: 'gpt-4o-mini' }, 'training_file'],
      [{ model: 'gpt-4o-mini', training_file: trainingFile, color: 'red' }, 'color'],
      [
        { model: 'gpt-4o-mini', training_file: trainingFile, method: { type: 'supervised', supervised: { hyperparameters: { n_epochs: 0 } } } },
        'method.supervised.hyperparameters.n_epochs',
      ],
      [{ model: 'gpt-4o-mini', training_file: trainingFile, method: { type: 'reinforcement' } }, 'method.type'],
      [{ model: 'gpt-4o-mini', training_file: trainingFile, suffix: 'x'.repeat(65) }, 'suffix'],
    ];
    for (const [body, param] of cases) {
      const res = await call(gw, 'POST', '/v1/fine_tuning/jobs', { body, headers: { 'x-gateway-provider': '@ft-openai' } });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(errorOf(res).type).toBe('invalid_request_error');
      expect(errorOf(res).param, JSON.stringify(body)).toBe(param);
    }
  });

  it('takes the explicit method, seed and validation file as given', async () => {
    const validation = fake.addFile({ filename: 'valid.jsonl' });
    const raw = await client().fineTuning.jobs.create({
      model: 'gpt-4o-mini-explicit',
      training_file: trainingFile,
      validation_file: validation,
      seed: 7,
      method: { type: 'dpo', dpo: { hyperparameters: { beta: 0.1, n_epochs: 2 } } },
    });
    const job = valid(raw);
    expect(job).toMatchObject({ seed: 7, validation_file: validation, hyperparameters: { n_epochs: 2, batch_size: 'auto', learning_rate_multiplier: 'auto' } });
    expect(raw.method).toEqual({ type: 'dpo', dpo: { hyperparameters: { beta: 0.1, n_epochs: 2, batch_size: 'auto', learning_rate_multiplier: 'auto' } } });
  });

  it('requires a managed provider that can fine-tune (a raw key goes to the provider’s own API)', async () => {
    const before = (await client().fineTuning.jobs.list()).data.length;
    const raw = await call(gw, 'POST', '/v1/fine_tuning/jobs', {
      body: { model: 'gpt-4o-mini', training_file: trainingFile },
      headers: { 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `${fake.url}/v1`, authorization: `Bearer ${PROVIDER_KEY}` },
    });
    expect(raw.status, raw.text).toBe(200);
    expect(raw.body.object).toBe('fine_tuning.job');
    expect((await client().fineTuning.jobs.list()).data.length).toBe(before);
    const none = await call(gw, 'POST', '/v1/fine_tuning/jobs', { body: { model: 'gpt-4o-mini', training_file: trainingFile } });
    expect(errorOf(none).code).toBe('managed_provider_required');
    const unknown = await call(gw, 'POST', '/v1/fine_tuning/jobs', {
      body: { model: 'm', training_file: trainingFile },
      headers: { 'x-gateway-virtual-key': 'nope' },
    });
    expect(errorOf(unknown).code).toBe('provider_not_found');
    const anthropic = await call(gw, 'POST', '/v1/fine_tuning/jobs', {
      body: { model: 'claude', training_file: trainingFile },
      headers: { 'x-gateway-provider': '@claude' },
    });
    expect(anthropic.status).toBe(400);
    expect(errorOf(anthropic).code).toBe('unsupported_provider');
  });

  it('refuses every per-request credential header exactly as the assistant endpoints do', async () => {
    // A config is a provider of its own (the request goes to the proxy, which refuses naming two).
    const config = await call(gw, 'POST', '/v1/fine_tuning/jobs', {
      body: { model: 'gpt-4o-mini', training_file: trainingFile },
      headers: { 'x-gateway-provider': '@ft-openai', 'x-gateway-config': '{"provider":"@ft-openai"}' },
    });
    expect(errorOf(config)).toMatchObject({ code: 'contradictory_provider', param: 'x-gateway-config' });
    for (const header of ['x-gateway-custom-host', 'x-gateway-aws-access-key-id', 'x-gateway-aws-secret-access-key', 'x-gateway-aws-session-token']) {
      const headers = { 'x-gateway-provider': '@ft-openai', [header]: 'per-request-value' };
      const job = await call(gw, 'POST', '/v1/fine_tuning/jobs', { body: { model: 'gpt-4o-mini', training_file: trainingFile }, headers });
      const thread = await call(gw, 'POST', '/v1/threads', { body: {}, headers });
      expect([job.status, thread.status], header).toEqual([400, 400]);
      expect(errorOf(job), header).toMatchObject({ code: 'managed_provider_required', param: header });
      expect(errorOf(thread), header).toMatchObject({ code: 'managed_provider_required', param: header });
    }
  });
});

// ---- list, pagination, isolation ----------------------------------------------------------

describe('list and isolation', () => {
  it('lists newest first with after/limit (default 20, max 100) and auto-pagination', async () => {
    const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: 'Fine-tuning pagination' } });
    const key = (await call(gw, 'POST', '/v1/api-keys', { body: { name: 'pages', workspace_id: ws.body.id, scopes: ['admin', 'gateway'] } })).body
      .secret as string;
    await call(gw, 'POST', '/v1/providers', { key, body: { slug: 'ft-openai', provider: 'openai', api_key: PROVIDER_KEY, custom_host: `${fake.url}/v1` } });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push(valid(await client(key).fineTuning.jobs.create({ model: `gpt-4o-mini-ft-hold-queued-page${i}`, training_file: trainingFile })).id);
    const newestFirst = [...ids].reverse();

    const page1 = await call(gw, 'GET', '/v1/fine_tuning/jobs?limit=2', { key });
    expect(page1.status).toBe(200);
    expect(Object.keys(page1.body).sort()).toEqual(['data', 'has_more', 'object']);
    expect(page1.body).toMatchObject({ object: 'list', has_more: true });
    expect(page1.body.data.map((j: { id: string }) => j.id)).toEqual(newestFirst.slice(0, 2));
    page1.body.data.forEach(valid);
    const page3 = await call(gw, 'GET', `/v1/fine_tuning/jobs?limit=2&after=${newestFirst[3]}`, { key });
    expect(page3.body.data.map((j: { id: string }) => j.id)).toEqual([newestFirst[4]]);
    expect(page3.body.has_more).toBe(false);

    const all: string[] = [];
    for await (const job of client(key).fineTuning.jobs.list({ limit: 2 })) all.push(valid(job).id);
    expect(all).toEqual(newestFirst);
    const byDefault = await call(gw, 'GET', '/v1/fine_tuning/jobs', { key });
    expect(byDefault.body.data).toHaveLength(5);

    for (const bad of ['limit=0', 'limit=101', 'limit=x']) {
      const res = await call(gw, 'GET', `/v1/fine_tuning/jobs?${bad}`, { key });
      expect(res.status, bad).toBe(400);
      expect(errorOf(res).param).toBe('limit');
    }
    const filtered = await call(gw, 'GET', '/v1/fine_tuning/jobs?metadata[team]=none', { key });
    expect(filtered.body.data).toEqual([]);
    for (const id of ids) await client(key).fineTuning.jobs.cancel(id);
  });

  it("keeps every workspace's jobs to itself", async () => {
    const mine = valid(await client().fineTuning.jobs.create({ model: 'gpt-4o-mini-ft-hold-queued-isolation', training_file: trainingFile }));
    const theirs = client(other.key);
    for (const attempt of [
      () => theirs.fineTuning.jobs.retrieve(mine.id),
      () => theirs.fineTuning.jobs.cancel(mine.id),
      () => theirs.fineTuning.jobs.listEvents(mine.id),
    ]) {
      const err = await attempt().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    }
    const listed: string[] = [];
    for await (const job of theirs.fineTuning.jobs.list()) listed.push(job.id);
    expect(listed).not.toContain(mine.id);
    // Their own jobs work with their own managed provider of the same slug.
    const own = valid(await theirs.fineTuning.jobs.create({ model: 'gpt-4o-mini-ft-hold-queued-theirs', training_file: trainingFile }));
    expect(own.organization_id).toBe(gw.organisationId);
    const notMine = await client()
      .fineTuning.jobs.retrieve(own.id)
      .catch((e: unknown) => e);
    expect(notMine).toBeInstanceOf(OpenAI.NotFoundError);
    // Still active in its own workspace; cancelling there works.
    expect(valid(await client().fineTuning.jobs.cancel(mine.id)).status).toBe('cancelled');
    expect(valid(await theirs.fineTuning.jobs.cancel(own.id)).status).toBe('cancelled');
  });

  it('404s unknown and malformed job ids', async () => {
    for (const path of [
      '/v1/fine_tuning/jobs/ftjob-00000000000000000000000000',
      '/v1/fine_tuning/jobs/not-a-job',
      '/v1/fine_tuning/jobs/ftjob-00000000000000000000000000/events',
    ]) {
      const res = await call(gw, 'GET', path);
      expect(res.status, path).toBe(404);
      expect(errorOf(res).type).toBe('not_found_error');
    }
  });
});

// ---- files of the gateway's own Files API ----------------------------------------------------

describe("a job on a file of the gateway's Files API", () => {
  const chatLine = (q: string) =>
    JSON.stringify({
      messages: [
        { role: 'user', content: q },
        { role: 'assistant', content: `answer to ${q}` },
      ],
    });
  const upload = async (text: string, filename: string, purpose: 'fine-tune' | 'batch' = 'fine-tune', key = gw.adminKey) =>
    client(key).files.create({ file: new File([text], filename), purpose } as never);

  it('hands the provider its own copy and trains on it; the job names the gateway file', async () => {
    const text = `${chatLine('a')}\n${chatLine('b')}\n`;
    const file = await upload(text, 'gateway-train.jsonl');
    expect(file.id).toMatch(/^file-[0-9a-z]{26}$/);
    const model = 'gpt-4o-mini-ft-hold-queued-gateway-file';
    const created = valid(await client().fineTuning.jobs.create({ model, training_file: file.id }));
    expect(created.training_file).toBe(file.id);

    const copy = [...fake.files.values()].find((f) => f.filename === 'gateway-train.jsonl');
    expect(copy).toMatchObject({ bytes: Buffer.byteLength(text), purpose: 'fine-tune' });
    await waitFor(() => providerJob(model) !== undefined);
    expect(providerJob(model)!.body.training_file).toBe(copy!.id);
    expect(valid(await client().fineTuning.jobs.retrieve(created.id)).training_file).toBe(file.id);
  });

  it('refuses a bad line (named), a file of another purpose, an unknown id and another workspace’s file, naming the field', async () => {
    const create = (body: Record<string, unknown>, key = gw.adminKey) =>
      call(gw, 'POST', '/v1/fine_tuning/jobs', { key, headers: { 'x-gateway-provider': '@ft-openai' }, body: { model: 'gpt-4o-mini', ...body } });
    const uploadsBefore = fake.files.size;

    const bad = await upload(`${chatLine('a')}\n${JSON.stringify({ messages: [{ role: 'user', content: 'no answer' }] })}\n`, 'bad.jsonl');
    const badLine = await create({ training_file: bad.id });
    expect(badLine.status, badLine.text).toBe(400);
    expect(errorOf(badLine)).toMatchObject({ param: 'training_file', code: 'invalid_training_file' });
    expect(errorOf(badLine).message).toMatch(/line 2 has no assistant message/);

    const good = await upload(`${chatLine('a')}\n`, 'good.jsonl');
    const notJson = await upload(`${chatLine('a')}\n{oops\n`, 'oops.jsonl');
    const badValidation = await create({ training_file: good.id, validation_file: notJson.id });
    expect(badValidation.status).toBe(400);
    expect(errorOf(badValidation)).toMatchObject({ param: 'validation_file', code: 'invalid_validation_file' });
    expect(errorOf(badValidation).message).toMatch(/line 2 is not valid JSON/);

    const batch = await upload(
      `${JSON.stringify({ custom_id: 'x', method: 'POST', url: '/v1/chat/completions', body: { model: 'm', messages: [] } })}\n`,
      'batch.jsonl',
      'batch',
    );
    const wrongPurpose = await create({ training_file: batch.id });
    expect(wrongPurpose.status).toBe(400);
    expect(errorOf(wrongPurpose).param).toBe('training_file');

    const unknown = await create({ training_file: 'file-00000000000000000000000000' });
    expect(unknown.status).toBe(404);
    expect(errorOf(unknown).param).toBe('training_file');

    const theirs = await create({ training_file: good.id }, other.key);
    expect(theirs.status, theirs.text).toBe(404);
    expect(errorOf(theirs).param).toBe('training_file');

    // Nothing reached the provider for any of them (the good training file waits on its validation file).
    expect(fake.files.size).toBe(uploadsBefore);
  });
});

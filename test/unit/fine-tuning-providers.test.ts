import { describe, expect, it } from 'vitest';
import { fineTuningAdapter, FINE_TUNING_PROVIDERS } from '../../functions/fine-tuning/providers/index';
import { fireworksControlPlane } from '../../functions/fine-tuning/providers/fireworks';
import type { Endpoint, JobSpec } from '../../functions/fine-tuning/providers/types';
import { getAdapter } from '../../functions/providers/registry';
import type { ProviderAdapter, ProviderTarget } from '../../functions/providers/types';
import { PROVIDER_SLUGS } from '../../functions/shared/provider-table';
import { parseMultipart } from '../fakes/multipart';

const ADAPTERS: Record<string, ProviderAdapter | undefined> = Object.fromEntries(await Promise.all(PROVIDER_SLUGS.map(async (s) => [s, await getAdapter(s)])));

/** The endpoint the workflow would use: the data-plane adapter's base URL and auth. */
function endpoint(target: ProviderTarget): Endpoint {
  const data = ADAPTERS[target.provider]!;
  return { base: data.baseUrl(target), auth: data.authHeaders(target), target };
}

const spec = (over: Partial<JobSpec> = {}): JobSpec => ({
  gatewayJobId: 'ftjob-01abc',
  model: 'base-model',
  trainingFile: 'file-train',
  validationFile: null,
  suffix: null,
  seed: 11,
  method: { type: 'supervised', supervised: { hyperparameters: { n_epochs: 3, batch_size: 'auto', learning_rate_multiplier: 'auto' } } },
  integrations: null,
  ...over,
});

const body = (req: { body?: string | Buffer }) => JSON.parse(String(req.body));

/** The fields and the file of a multipart upload request. */
function form(req: { headers: Record<string, string>; body?: string | Buffer }) {
  const parsed = parseMultipart(Buffer.from(req.body ?? ''), req.headers['content-type']!)!;
  const file = parsed.files[0]!;
  return { fields: parsed.fields, file: { field: file.name, filename: file.filename, text: file.data.toString('utf8') } };
}

describe('fine-tuning adapters: one interface', () => {
  it('covers the five providers, each under its data-plane slug', () => {
    expect(FINE_TUNING_PROVIDERS.sort()).toEqual(['azure-openai', 'fireworks-ai', 'mistral-ai', 'openai', 'together-ai']);
    for (const kind of FINE_TUNING_PROVIDERS) {
      expect(fineTuningAdapter(kind)!.kind).toBe(kind);
      expect(ADAPTERS[kind], kind).toBeDefined();
    }
    expect(fineTuningAdapter('anthropic')).toBeUndefined();
    expect(fineTuningAdapter('__proto__')).toBeUndefined();
  });
});

describe('OpenAI', () => {
  const a = fineTuningAdapter('openai')!;
  const e = endpoint({ provider: 'openai', apiKey: 'sk-1' });

  it('finds the jobs that carry a gateway job id (metadata filter), for a submit retried after a lost answer', () => {
    const request = a.findJobs!(e, 'ftjob-gw 1');
    expect(request).toMatchObject({ method: 'GET', url: 'https://api.openai.com/v1/fine_tuning/jobs?metadata[gateway_job_id]=ftjob-gw%201&limit=10' });
    const list = a.parseJobList!({
      object: 'list',
      data: [{ id: 'ftjob-abc', status: 'queued', metadata: { gateway_job_id: 'ftjob-gw 1' } }],
      has_more: false,
    });
    expect(list.map((j) => [j.id, j.status])).toEqual([['ftjob-abc', 'queued']]);
  });

  it('builds the OpenAI requests with Bearer auth', () => {
    const { request, warnings } = a.createJob(
      e,
      spec({ suffix: 'bot', validationFile: 'file-val', integrations: [{ type: 'wandb', wandb: { project: 'p' } }] }),
    );
    expect(request).toMatchObject({ url: 'https://api.openai.com/v1/fine_tuning/jobs', method: 'POST', headers: { authorization: 'Bearer sk-1' } });
    expect(body(request)).toEqual({
      model: 'base-model',
      training_file: 'file-train',
      validation_file: 'file-val',
      suffix: 'bot',
      seed: 11,
      method: spec().method,
      integrations: [{ type: 'wandb', wandb: { project: 'p' } }],
      metadata: { gateway_job_id: 'ftjob-01abc' },
    });
    expect(warnings).toEqual([]);
    expect(a.retrieveFile(e, 'file/../x').url).toBe('https://api.openai.com/v1/files/file%2F..%2Fx');
    expect(a.retrieveJob(e, 'ftjob-1')).toMatchObject({ method: 'GET', url: 'https://api.openai.com/v1/fine_tuning/jobs/ftjob-1' });
    expect(a.cancelJob(e, 'ftjob-1')).toMatchObject({ method: 'POST', url: 'https://api.openai.com/v1/fine_tuning/jobs/ftjob-1/cancel' });
    expect(a.listEvents!(e, 'ftjob-1').url).toBe('https://api.openai.com/v1/fine_tuning/jobs/ftjob-1/events?limit=100');
  });

  it('honours the managed provider custom host', () => {
    const custom = endpoint({ provider: 'openai', apiKey: 'k', customHost: 'http://127.0.0.1:9/v1/' });
    expect(a.retrieveJob(custom, 'j').url).toBe('http://127.0.0.1:9/v1/fine_tuning/jobs/j');
  });

  it('maps job states and the failure error', () => {
    expect(a.parseJob({ id: 'j', status: 'validating_files' }).status).toBe('validating_files');
    const running = a.parseJob({ id: 'j', status: 'running', estimated_finish: 1700000000, hyperparameters: { n_epochs: 4, batch_size: 'auto' } });
    expect(running).toMatchObject({ status: 'running', estimatedFinish: 1700000000, hyperparameters: { n_epochs: 4, batch_size: 'auto' } });
    const done = a.parseJob({ id: 'j', status: 'succeeded', fine_tuned_model: 'ft:x', trained_tokens: 99, result_files: ['file-r'] });
    expect(done).toMatchObject({ status: 'succeeded', fineTunedModel: 'ft:x', trainedTokens: 99, resultFiles: ['file-r'] });
    expect(a.parseJob({ id: 'j', status: 'failed', error: { code: 'bad_data', message: 'Bad', param: 'training_file' } }).error).toEqual({
      code: 'bad_data',
      message: 'Bad',
      param: 'training_file',
    });
    expect(a.parseJob({ id: 'j', status: 'failed', error: null }).error).toMatchObject({ code: 'provider_job_failed', param: '' });
    expect(a.parseEvents({ data: [{ id: 'e1', created_at: 5, level: 'warn', message: 'm', type: 'metrics', data: { step: 1 } }, { bad: true }] })).toEqual([
      { id: 'e1', createdAt: 5, level: 'warn', message: 'm', type: 'metrics', data: { step: 1 } },
    ]);
  });
});

describe('Azure OpenAI', () => {
  const a = fineTuningAdapter('azure-openai')!;
  const e = endpoint({ provider: 'azure-openai', apiKey: 'az-key', azure: { resourceName: 'myres' } });

  it('keeps no metadata, so it cannot look a job up by the gateway id', () => {
    expect(a.findJobs).toBeUndefined();
  });

  it('uses the resource URL, api-version and api-key; supervised hyperparameters at the top level', () => {
    const { request, warnings } = a.createJob(e, spec({ integrations: [{ type: 'wandb', wandb: { project: 'p' } }] }));
    expect(request.url).toBe('https://myres.openai.azure.com/openai/fine_tuning/jobs?api-version=2024-10-21');
    expect(request.headers['api-key']).toBe('az-key');
    expect(body(request)).toEqual({
      model: 'base-model',
      training_file: 'file-train',
      seed: 11,
      hyperparameters: { n_epochs: 3, batch_size: 'auto', learning_rate_multiplier: 'auto' },
    });
    expect(warnings[0]).toMatch(/integrations/);
    const dpo = a.createJob(
      e,
      spec({ method: { type: 'dpo', dpo: { hyperparameters: { n_epochs: 'auto', batch_size: 'auto', learning_rate_multiplier: 'auto', beta: 0.2 } } } }),
    );
    expect(body(dpo.request).method).toMatchObject({ type: 'dpo' });
    const v = endpoint({ provider: 'azure-openai', apiKey: 'k', azure: { resourceName: 'myres', apiVersion: '2025-02-01-preview' } });
    expect(a.listEvents!(v, 'ftjob-1').url).toBe(
      'https://myres.openai.azure.com/openai/fine_tuning/jobs/ftjob-1/events?api-version=2025-02-01-preview&limit=100',
    );
  });

  it("maps Azure's own statuses and unusable files", () => {
    expect(a.parseJob({ id: 'j', status: 'notRunning' }).status).toBe('queued');
    expect(a.parseJob({ id: 'j', status: 'pending' }).status).toBe('queued');
    expect(a.parseJob({ id: 'j', status: 'canceled' }).status).toBe('cancelled');
    expect(a.parseFile!({ status: 'error', status_details: 'invalid JSONL on line 3' })).toEqual({ usable: false, reason: 'invalid JSONL on line 3' });
    expect(a.parseFile!({ status: 'processed' })).toEqual({ usable: true });
  });
});

describe('Together AI', () => {
  const a = fineTuningAdapter('together-ai')!;
  const e = endpoint({ provider: 'together-ai', apiKey: 'tg' });

  it('maps the create body onto /fine-tunes and warns about what it cannot send', () => {
    const { request, warnings } = a.createJob(
      e,
      spec({ suffix: 's', method: { type: 'dpo', dpo: { hyperparameters: { n_epochs: 2, batch_size: 8, learning_rate_multiplier: 1.5, beta: 0.3 } } } }),
    );
    expect(request.url).toBe('https://api.together.xyz/v1/fine-tunes');
    expect(body(request)).toEqual({
      model: 'base-model',
      training_file: 'file-train',
      suffix: 's',
      n_epochs: 2,
      batch_size: 8,
      training_method: { method: 'dpo', dpo_beta: 0.3 },
    });
    expect(warnings.join(' ')).toMatch(/learning_rate_multiplier.*seed/s);
    expect(a.cancelJob(e, 'ft-1').url).toBe('https://api.together.xyz/v1/fine-tunes/ft-1/cancel');
  });

  it("uploads a gateway file's copy to /files/upload with its name as a field", () => {
    const req = a.uploadFile!(e, { filename: 'train.jsonl', bytes: Buffer.from('{"messages":[]}\n') });
    expect(req.url).toBe('https://api.together.xyz/v1/files/upload');
    expect(req.headers.authorization).toBe('Bearer tg');
    expect(form(req)).toEqual({
      fields: { purpose: 'fine-tune', file_name: 'train.jsonl', file_type: 'jsonl' },
      file: { field: 'file', filename: 'train.jsonl', text: '{"messages":[]}\n' },
    });
  });

  it('maps statuses, the output model and ISO-dated events with stable ids', () => {
    expect(a.parseJob({ id: 'ft-1', status: 'pending' }).status).toBe('queued');
    expect(a.parseJob({ id: 'ft-1', status: 'compressing' }).status).toBe('running');
    const done = a.parseJob({ id: 'ft-1', status: 'completed', output_name: 'me/model-ft', token_count: 850000 });
    expect(done).toMatchObject({ status: 'succeeded', fineTunedModel: 'me/model-ft', trainedTokens: 850000 });
    const failed = a.parseJob({ id: 'ft-1', status: 'error', events: [{ level: 'error', message: 'OOM on step 3' }] });
    expect(failed.error).toMatchObject({ message: 'OOM on step 3' });
    const events = a.parseEvents({ data: [{ created_at: '2024-05-17T17:35:45.123Z', level: 'warning', message: 'slow', type: 'job_start' }] });
    expect(events).toEqual([{ id: expect.any(String), createdAt: 1715967345, level: 'warn', message: 'slow', type: 'message', data: { type: 'job_start' } }]);
    expect(a.parseEvents({ data: [{ created_at: '2024-05-17T17:35:45.123Z', level: 'warning', message: 'slow', type: 'job_start' }] })[0]!.id).toBe(
      events[0]!.id,
    );
  });
});

describe('Mistral AI', () => {
  const a = fineTuningAdapter('mistral-ai')!;
  const e = endpoint({ provider: 'mistral-ai', apiKey: 'ms' });

  it('sends training_files, epochs and auto_start; supervised only', () => {
    expect(a.methods).toEqual(['supervised']);
    const { request, warnings } = a.createJob(e, spec({ validationFile: 'file-v', suffix: 'x' }));
    expect(request.url).toBe('https://api.mistral.ai/v1/fine_tuning/jobs');
    expect(body(request)).toEqual({
      model: 'base-model',
      training_files: [{ file_id: 'file-train', weight: 1 }],
      validation_files: ['file-v'],
      suffix: 'x',
      auto_start: true,
      hyperparameters: { epochs: 3 },
    });
    expect(warnings.join(' ')).toMatch(/seed/);
  });

  it("uploads a gateway file's copy to /files with purpose fine-tune", () => {
    const req = a.uploadFile!(e, { filename: 'train.jsonl', bytes: Buffer.from('{"messages":[]}\n') });
    expect(req.url).toBe('https://api.mistral.ai/v1/files');
    expect(req.headers.authorization).toBe('Bearer ms');
    expect(form(req)).toEqual({ fields: { purpose: 'fine-tune' }, file: { field: 'file', filename: 'train.jsonl', text: '{"messages":[]}\n' } });
  });

  it('maps statuses without moving backwards and reads events embedded in the job', () => {
    expect(a.parseJob({ id: 'm', status: 'VALIDATED' }).status).toBe('validating_files');
    expect(a.parseJob({ id: 'm', status: 'SUCCESS', fine_tuned_model: 'ft:open-mistral:x', trained_tokens: 10 })).toMatchObject({
      status: 'succeeded',
      fineTunedModel: 'ft:open-mistral:x',
      trainedTokens: 10,
    });
    expect(a.parseJob({ id: 'm', status: 'FAILED_VALIDATION' }).error).toMatchObject({ code: 'invalid_training_file' });
    const job = { events: [{ name: 'status-updated', data: { status: 'RUNNING' }, created_at: 1716963433 }] };
    expect(a.parseEvents(job)).toEqual([
      { id: expect.any(String), createdAt: 1716963433, level: 'info', message: 'Mistral AI job status: RUNNING', type: 'message', data: { status: 'RUNNING' } },
    ]);
    expect(a.listEvents).toBeUndefined();
  });
});

describe('Fireworks AI (a control plane of its own)', () => {
  const a = fineTuningAdapter('fireworks-ai')!;
  const e = endpoint({ provider: 'fireworks-ai', apiKey: 'fw' });
  const dataset = 'accounts/acme/datasets/support-v1';

  it('requires dataset resource names and takes the account from them', () => {
    expect(a.checkSpec!(spec())).toMatchObject({ param: 'training_file', message: expect.stringMatching(/accounts\/<account_id>\/datasets/) });
    expect(a.checkSpec!(spec({ trainingFile: dataset, validationFile: 'accounts/other/datasets/v' }))).toMatchObject({
      param: 'validation_file',
      message: expect.stringMatching(/same Fireworks account/),
    });
    expect(a.checkSpec!(spec({ trainingFile: dataset, validationFile: 'accounts/acme/datasets/v' }))).toBeUndefined();
  });

  it('creates supervisedFineTuningJobs on the control plane', () => {
    expect(e.base).toBe('https://api.fireworks.ai/inference/v1');
    const { request, warnings } = a.createJob(e, spec({ trainingFile: dataset, model: 'llama-v3p1-8b-instruct', suffix: 'bot' }));
    expect(request.url).toBe('https://api.fireworks.ai/v1/accounts/acme/supervisedFineTuningJobs');
    expect(request.headers.authorization).toBe('Bearer fw');
    expect(body(request)).toEqual({ dataset, baseModel: 'accounts/fireworks/models/llama-v3p1-8b-instruct', displayName: 'bot', epochs: 3 });
    expect(warnings.join(' ')).toMatch(/seed/);
    expect(a.retrieveFile(e, dataset).url).toBe('https://api.fireworks.ai/v1/accounts/acme/datasets/support-v1');
    const job = 'accounts/acme/supervisedFineTuningJobs/abc123';
    expect(a.retrieveJob(e, job).url).toBe(`https://api.fireworks.ai/v1/${job}`);
    expect(a.cancelJob(e, job)).toMatchObject({ method: 'POST', url: `https://api.fireworks.ai/v1/${job}:cancel` });
    expect(() => a.retrieveJob(e, '../../admin')).toThrow();
    expect(fireworksControlPlane('http://127.0.0.1:9/inference/v1', 'http://127.0.0.1:9/inference/v1')).toBe('http://127.0.0.1:9/v1');
  });

  it('maps JOB_STATE_*, READY datasets and progress as metrics events', () => {
    expect(a.parseJob({ name: 'accounts/a/supervisedFineTuningJobs/j', state: 'JOB_STATE_CREATING' })).toMatchObject({
      id: 'accounts/a/supervisedFineTuningJobs/j',
      status: 'queued',
    });
    expect(a.parseJob({ name: 'x', state: 'JOB_STATE_COMPLETED', outputModel: 'accounts/a/models/m' })).toMatchObject({
      status: 'succeeded',
      fineTunedModel: 'accounts/a/models/m',
    });
    expect(a.parseJob({ name: 'x', state: 'JOB_STATE_FAILED', status: { code: 'INVALID_ARGUMENT', message: 'bad rows' } }).error).toEqual({
      code: 'INVALID_ARGUMENT',
      message: 'bad rows',
      param: '',
    });
    expect(a.parseFile!({ state: 'READY' })).toEqual({ usable: true });
    expect(a.parseFile!({ state: 'UPLOADING' }).usable).toBe(false);
    expect(a.parseEvents({ jobProgress: { percent: 40 }, updateTime: '2024-01-01T00:00:00Z' })).toEqual([
      { id: 'progress-40', createdAt: 1704067200, level: 'info', message: 'Training progress: 40%', type: 'metrics', data: { percent: 40 } },
    ]);
  });
});

/**
 * Fake OpenAI-style fine-tuning provider: files and
 * jobs whose status advances one step each time the job is retrieved (polled), with failure
 * and cancel paths. Routes match on the path suffix, so `/v1/...` (OpenAI) and Azure's
 * `/openai/...?api-version=` both work.
 *
 * - POST …/files (multipart: file, purpose)   GET …/files   GET|DELETE …/files/{id}
 * - POST …/fine_tuning/jobs                   GET …/fine_tuning/jobs (after, limit, metadata[k]=v)
 * - GET  …/fine_tuning/jobs/{id}              advances the job's script by one step
 * - POST …/fine_tuning/jobs/{id}/cancel       400 once the job is terminal
 * - GET  …/fine_tuning/jobs/{id}/events       newest first (after, limit)
 *
 * Scripts, chosen by the job's model name (or `setScript`):
 *   default           validating_files, queued, running, running, succeeded
 *   *ft-fail*         validating_files, queued, running, failed (error with code/message/param)
 *   *ft-hold-queued*  validating_files, queued (forever)
 *   *ft-hold-running* validating_files, queued, running (forever)
 * The shared knobs of ./behaviour.ts apply (error injection, latency, ...).
 * Auth: `Authorization: Bearer <key>` or Azure `api-key`.
 */
import { randomBytes } from 'node:crypto';
import { bearer, obj, startFake, str, type Exchange, type FakeOptions, type FakeServer, type RecordedRequest } from './behaviour';
import { openaiError } from './openai';

export type FakeJobStatus = 'validating_files' | 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';

export interface FakeFile {
  id: string;
  object: 'file';
  bytes: number;
  created_at: number;
  filename: string;
  purpose: string;
  status: 'uploaded' | 'processed' | 'error';
}

export interface FakeJob {
  id: string;
  model: string;
  body: Record<string, unknown>;
  script: FakeJobStatus[];
  /** Index into the script (advanced by each retrieve). */
  step: number;
  status: FakeJobStatus;
  created_at: number;
  finished_at: number | null;
  retrieves: number;
  cancelled: boolean;
  events: Array<{ object: 'fine_tuning.job.event'; id: string; created_at: number; level: string; message: string; type: string; data: unknown }>;
}

export interface FineTuningFake extends FakeServer {
  /** Files known to the fake (uploaded or added). */
  readonly files: Map<string, FakeFile>;
  readonly jobs: Map<string, FakeJob>;
  /** Add a file without an upload; returns its id. */
  addFile(file?: Partial<FakeFile>): string;
  /** Force the script of jobs whose model contains `modelPart`. */
  setScript(modelPart: string, script: FakeJobStatus[]): void;
  /**
   * Hold every request that matches until `release()` (deterministic "slow provider"):
   * `held()` counts the requests waiting now.
   */
  hold(match: (req: RecordedRequest) => boolean): { held(): number; release(): void };
  /** The next job creation stores the job, then answers 503 (the answer lost on the way). */
  loseNextCreateAnswer(): void;
}

const SCRIPTS: Array<[string, FakeJobStatus[]]> = [
  ['ft-fail', ['validating_files', 'queued', 'running', 'failed']],
  ['ft-hold-queued', ['validating_files', 'queued']],
  ['ft-hold-running', ['validating_files', 'queued', 'running']],
];
const DEFAULT_SCRIPT: FakeJobStatus[] = ['validating_files', 'queued', 'running', 'running', 'succeeded'];
const TERMINAL = new Set<FakeJobStatus>(['succeeded', 'failed', 'cancelled']);

export const FAKE_JOB_ERROR = {
  code: 'invalid_training_data',
  message: 'The training file has 3 examples; at least 10 are required.',
  param: 'training_file',
};

const now = () => Math.floor(Date.now() / 1000);
const rid = (n = 12) =>
  randomBytes(n)
    .toString('hex')
    .slice(0, n * 2);

export async function startFineTuningFake(options: FakeOptions = {}): Promise<FineTuningFake> {
  const files = new Map<string, FakeFile>();
  const jobs = new Map<string, FakeJob>();
  const scripts: Array<[string, FakeJobStatus[]]> = [...SCRIPTS];
  const holds = new Set<{ match: (req: RecordedRequest) => boolean; gate: Promise<void>; waiting: number }>();
  let eventSeq = 0;
  let loseCreateAnswer = false;

  const addEvent = (job: FakeJob, message: string, level = 'info', type = 'message', data: unknown = {}) => {
    job.events.unshift({
      object: 'fine_tuning.job.event',
      id: `ftevent-fake${String(++eventSeq).padStart(6, '0')}`,
      created_at: now(),
      level,
      message,
      type,
      data,
    });
  };

  const jobObject = (job: FakeJob) => {
    const b = job.body;
    const succeeded = job.status === 'succeeded';
    const method = obj(b.method);
    return {
      object: 'fine_tuning.job',
      id: job.id,
      model: job.model,
      created_at: job.created_at,
      finished_at: job.finished_at,
      fine_tuned_model: succeeded ? `ft:${job.model}:fake-org:${str(b.suffix) ?? ''}:${job.id.slice(-8)}` : null,
      organization_id: 'org-fake',
      result_files: succeeded ? [`file-result-${job.id.slice(-8)}`] : [],
      status: job.status,
      validation_file: str(b.validation_file) ?? null,
      training_file: str(b.training_file),
      hyperparameters: { n_epochs: 3, batch_size: 1, learning_rate_multiplier: 2 },
      trained_tokens: succeeded ? 12345 : null,
      error: job.status === 'failed' ? FAKE_JOB_ERROR : null,
      integrations: b.integrations ?? [],
      seed: typeof b.seed === 'number' ? b.seed : 42,
      estimated_finish: job.status === 'running' ? now() + 600 : null,
      method: Object.keys(method).length
        ? method
        : { type: 'supervised', supervised: { hyperparameters: { n_epochs: 3, batch_size: 1, learning_rate_multiplier: 2 } } },
      metadata: b.metadata ?? null,
    };
  };

  const setStatus = (job: FakeJob, status: FakeJobStatus) => {
    if (job.status === status) {
      if (status === 'running')
        addEvent(job, `Step ${job.retrieves}: training loss=${(1 / (job.retrieves + 1)).toFixed(4)}`, 'info', 'metrics', {
          step: job.retrieves,
          train_loss: 1 / (job.retrieves + 1),
        });
      return;
    }
    job.status = status;
    if (TERMINAL.has(status)) job.finished_at = now();
    const messages: Record<FakeJobStatus, string> = {
      validating_files: 'Validating training file',
      queued: 'Files validated, moving job to queued state',
      running: 'Fine-tuning job started',
      succeeded: 'The job has successfully completed',
      failed: `The job failed: ${FAKE_JOB_ERROR.message}`,
      cancelled: 'Job cancelled',
    };
    addEvent(job, messages[status], status === 'failed' ? 'error' : 'info');
  };

  async function handle(ex: Exchange): Promise<void> {
    const { rec } = ex;
    for (const h of holds) {
      if (!h.match(rec)) continue;
      h.waiting++;
      await h.gate;
      h.waiting--;
    }
    if (!(await ex.begin(undefined, false))) return;
    const key = bearer(rec) ?? rec.headers['api-key'];
    if (!key) return ex.error(401, "You didn't provide an API key.");
    if (ex.apiKey !== undefined && key !== ex.apiKey) return ex.error(401, `Incorrect API key provided: ${key.slice(0, 6)}***.`);

    const path = rec.path;
    const fileRoute = /\/files(?:\/([^/]+))?$/.exec(path);
    const jobRoute = /\/fine_tuning\/jobs(?:\/([^/]+)(?:\/(cancel|events))?)?$/.exec(path);

    if (fileRoute) {
      const id = fileRoute[1] ? decodeURIComponent(fileRoute[1]) : undefined;
      if (!id && rec.method === 'POST') {
        const upload = rec.form?.files.find((f) => f.name === 'file');
        const purpose = rec.form?.fields.purpose;
        if (!upload || !purpose) return ex.error(400, "Missing required parameter: 'file' and 'purpose' are required.");
        const fileId = `file-${rid(12)}`;
        const file: FakeFile = {
          id: fileId,
          object: 'file',
          bytes: upload.data.length,
          created_at: now(),
          filename: upload.filename,
          purpose,
          status: 'processed',
        };
        files.set(fileId, file);
        return ex.json(200, file);
      }
      if (!id && rec.method === 'GET')
        return ex.json(200, { object: 'list', data: [...files.values()].reverse(), first_id: null, last_id: null, has_more: false });
      const file = id ? files.get(id) : undefined;
      if (!file) return ex.json(404, { error: { message: `No such File object: ${id}`, type: 'invalid_request_error', param: 'id', code: null } });
      if (rec.method === 'GET') return ex.json(200, file);
      if (rec.method === 'DELETE') {
        files.delete(file.id);
        return ex.json(200, { id: file.id, object: 'file', deleted: true });
      }
    }

    if (jobRoute) {
      const id = jobRoute[1] ? decodeURIComponent(jobRoute[1]) : undefined;
      const action = jobRoute[2];
      if (!id && rec.method === 'POST') {
        const body = obj(rec.body);
        const model = str(body.model);
        const training = str(body.training_file);
        rec.model = model;
        if (!model || !training) return ex.error(400, "Missing required parameter: 'model' and 'training_file' are required.");
        if (!files.has(training))
          return ex.json(400, { error: { message: `invalid training_file: ${training}`, type: 'invalid_request_error', param: 'training_file', code: null } });
        const script = scripts.find(([part]) => model.includes(part))?.[1] ?? DEFAULT_SCRIPT;
        const job: FakeJob = {
          id: `ftjob-fake${rid(8)}`,
          model,
          body,
          script: [...script],
          step: 0,
          status: script[0]!,
          created_at: now(),
          finished_at: null,
          retrieves: 0,
          cancelled: false,
          events: [],
        };
        jobs.set(job.id, job);
        addEvent(job, `Created fine-tuning job: ${job.id}`);
        addEvent(job, `Validating training file: ${training}`);
        if (loseCreateAnswer) {
          loseCreateAnswer = false;
          return ex.error(503, 'The server had an error while processing your request.');
        }
        return ex.json(200, jobObject(job));
      }
      if (!id && rec.method === 'GET') {
        const metadataFilters = Object.entries(rec.query).flatMap(([k, v]) => {
          const key = /^metadata\[(.+)\]$/.exec(k)?.[1];
          return key === undefined ? [] : [[key, v] as const];
        });
        const all = [...jobs.values()].reverse().filter((j) => metadataFilters.every(([k, v]) => str(obj(j.body.metadata)[k]) === v));
        const start = rec.query.after ? all.findIndex((j) => j.id === rec.query.after) + 1 : 0;
        const limit = Number(rec.query.limit ?? 20);
        const page = all.slice(start, start + limit);
        return ex.json(200, { object: 'list', data: page.map(jobObject), has_more: start + limit < all.length });
      }
      const job = id ? jobs.get(id) : undefined;
      if (!job)
        return ex.json(404, {
          error: { message: `No such fine-tuning job: ${id}`, type: 'invalid_request_error', param: 'fine_tuning_job_id', code: 'fine_tune_not_found' },
        });
      if (!action && rec.method === 'GET') {
        job.retrieves++;
        if (!TERMINAL.has(job.status)) {
          job.step = Math.min(job.step + 1, job.script.length - 1);
          setStatus(job, job.script[job.step]!);
        }
        return ex.json(200, jobObject(job));
      }
      if (action === 'cancel' && rec.method === 'POST') {
        if (TERMINAL.has(job.status)) {
          return ex.json(400, {
            error: {
              message: `Job has already ${job.status === 'cancelled' ? 'been cancelled' : 'completed'}: ${job.id}`,
              type: 'invalid_request_error',
              param: null,
              code: 'job_not_cancellable',
            },
          });
        }
        job.cancelled = true;
        setStatus(job, 'cancelled');
        return ex.json(200, jobObject(job));
      }
      if (action === 'events' && rec.method === 'GET') {
        const start = rec.query.after ? job.events.findIndex((e) => e.id === rec.query.after) + 1 : 0;
        const limit = Number(rec.query.limit ?? 20);
        return ex.json(200, { object: 'list', data: job.events.slice(start, start + limit), has_more: start + limit < job.events.length });
      }
    }
    return ex.error(404, `Unknown fake fine-tuning route: ${rec.method} ${path}`);
  }

  const server = await startFake('fine-tuning', options, openaiError, handle);
  return Object.assign(server, {
    files,
    jobs,
    addFile(file: Partial<FakeFile> = {}) {
      const id = file.id ?? `file-${rid(12)}`;
      files.set(id, { object: 'file', bytes: 1024, created_at: now(), filename: 'train.jsonl', purpose: 'fine-tune', status: 'processed', ...file, id });
      return id;
    },
    setScript(modelPart: string, script: FakeJobStatus[]) {
      scripts.unshift([modelPart, script]);
    },
    hold(match: (req: RecordedRequest) => boolean) {
      let release!: () => void;
      const h = { match, gate: new Promise<void>((r) => (release = r)), waiting: 0 };
      holds.add(h);
      return {
        held: () => h.waiting,
        release() {
          holds.delete(h);
          release();
        },
      };
    },
    loseNextCreateAnswer() {
      loseCreateAnswer = true;
    },
  });
}

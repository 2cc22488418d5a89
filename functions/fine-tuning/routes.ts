/**
 * `/v1/fine_tuning/jobs`: create, list,
 * retrieve, cancel, events. Jobs belong to the API key's workspace; another workspace's job
 * is a 404. Creating a job needs a managed provider (./credentials.ts); reading and
 * cancelling use the provider stored on the job.
 */
import { notFound } from '../shared/errors';
import { pageFromQuery } from '../shared/http/list';
import { ok } from '../shared/http/response';
import type { GatewayRequest, Route } from '../shared/http/types';
import { fineTuningProviderKind, managedProviderSlug } from './credentials';
import { toPublicJob } from './job-object';
import { cancelFineTuningJob, createFineTuningJob } from './lifecycle';
import { metadataFilter, parseCreateJob } from './schema';
import { getJob, listEvents, listJobs } from './store';
import { idempotency } from '../shared/http/idempotency';

const JOB_ID = /^ftjob-[0-9a-z]{26}$/;

function jobId(req: GatewayRequest): string {
  const id = req.params.fine_tuning_job_id!;
  if (!JOB_ID.test(id)) throw notFound(`No fine-tuning job '${id.slice(0, 64)}' in this workspace.`, 'fine_tuning_job_id');
  return id;
}

async function create(req: GatewayRequest) {
  const slug = managedProviderSlug(req);
  const input = parseCreateJob(req.json());
  const providerKind = await fineTuningProviderKind(req.auth.workspaceId, slug);
  const job = await createFineTuningJob({
    workspaceId: req.auth.workspaceId,
    organizationId: req.auth.organisationId,
    providerSlug: slug,
    providerKind,
    input,
    context: req.context,
  });
  return ok(toPublicJob(job));
}

async function list(req: GatewayRequest) {
  const { limit, after } = pageFromQuery(req.query, { limit: 20, maxLimit: 100 });
  const page = await listJobs(req.auth.workspaceId, { limit, after }, metadataFilter(req.query));
  return ok({ object: 'list', data: page.items.map(toPublicJob), has_more: page.hasMore });
}

async function retrieve(req: GatewayRequest) {
  const id = jobId(req);
  const job = await getJob(req.auth.workspaceId, id);
  if (!job) throw notFound(`No fine-tuning job '${id}' in this workspace.`, 'fine_tuning_job_id');
  return ok(toPublicJob(job));
}

async function cancel(req: GatewayRequest) {
  return ok(toPublicJob(await cancelFineTuningJob(req.auth.workspaceId, jobId(req), req.context)));
}

async function events(req: GatewayRequest) {
  const id = jobId(req);
  const { limit, after } = pageFromQuery(req.query, { limit: 20, maxLimit: 100 });
  if (!(await getJob(req.auth.workspaceId, id))) throw notFound(`No fine-tuning job '${id}' in this workspace.`, 'fine_tuning_job_id');
  const page = await listEvents(req.auth.workspaceId, id, { limit, after });
  return ok({ object: 'list', data: page.items, has_more: page.hasMore });
}

export const fineTuningRoutes: Route[] = [
  { method: 'POST', path: '/v1/fine_tuning/jobs', access: 'gateway', name: 'fine_tuning.jobs.create', use: [idempotency], handler: create },
  { method: 'GET', path: '/v1/fine_tuning/jobs', access: 'gateway', name: 'fine_tuning.jobs.list', handler: list },
  { method: 'GET', path: '/v1/fine_tuning/jobs/{fine_tuning_job_id}', access: 'gateway', name: 'fine_tuning.jobs.retrieve', handler: retrieve },
  { method: 'POST', path: '/v1/fine_tuning/jobs/{fine_tuning_job_id}/cancel', access: 'gateway', name: 'fine_tuning.jobs.cancel', handler: cancel },
  { method: 'GET', path: '/v1/fine_tuning/jobs/{fine_tuning_job_id}/events', access: 'gateway', name: 'fine_tuning.jobs.events', handler: events },
];

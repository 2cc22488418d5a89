/**
 * One interface for every provider's fine-tuning API (issue «Fine-tuning jobs» item 3).
 * Adapters are pure: they build upstream requests and read responses; the I/O, error
 * mapping and retries live in ./client.ts and the workflow. To add a provider, implement
 * FineTuningAdapter (often with ./openai-compatible.ts) and list it in ./index.ts.
 */
import type { ProviderTarget, UpstreamRequest } from '../../providers/types';
import type { FineTuningProviderKind, Hyperparameters, JobError, JobStatus, Method, WandbIntegration } from '../types';

/** What the gateway asks a provider to train. */
export interface JobSpec {
  /** The gateway's job id (sent as metadata where the provider accepts it). */
  gatewayJobId: string;
  model: string;
  trainingFile: string;
  validationFile: string | null;
  suffix: string | null;
  seed: number;
  method: Method;
  integrations: WandbIntegration[] | null;
}

/** A provider job read back, mapped onto the gateway's states. */
export interface ProviderJobState {
  id: string;
  status: JobStatus;
  /** The provider's own status word (kept for diagnosis). */
  providerStatus: string;
  fineTunedModel: string | null;
  trainedTokens: number | null;
  resultFiles: string[];
  estimatedFinish: number | null;
  /** Resolved hyperparameters, when the provider reports them. */
  hyperparameters?: Partial<Hyperparameters>;
  /** Filled when `status` is `failed`. */
  error?: JobError;
}

export interface ProviderEvent {
  /** Stable id at the provider (or derived from the event's content): used to deduplicate. */
  id: string;
  /** Unix seconds. */
  createdAt: number;
  level: 'info' | 'warn' | 'error';
  message: string;
  type: 'message' | 'metrics';
  data: Record<string, unknown> | null;
}

export interface FileCheck {
  /** False: the file exists but cannot be trained on (e.g. processing failed). */
  usable: boolean;
  reason?: string;
}

export interface CreateRequest {
  request: UpstreamRequest;
  /** Parts of the spec the provider cannot take, recorded as `warn` events on the job. */
  warnings: string[];
}

/**
 * Where and how to call the provider, derived from the data-plane adapter of the same slug
 * (its base URL honours the managed provider's custom host; its auth headers are the
 * provider's own: Bearer, Azure `api-key`, ...).
 */
export interface Endpoint {
  base: string;
  auth: Record<string, string>;
  target: ProviderTarget;
}

export interface FineTuningAdapter {
  kind: FineTuningProviderKind;
  name: string;
  /** Methods the provider can train; others are refused with a 400 when the job is created. */
  methods: ReadonlyArray<Method['type']>;
  /** Why the request cannot work with this provider (e.g. file id format): a 400 naming `param`. */
  checkSpec?(spec: JobSpec): { message: string; param: string } | undefined;
  /** GET a training/validation file (a 404 means it does not exist). */
  retrieveFile(e: Endpoint, fileId: string): UpstreamRequest;
  /** Reads the file object; absent: any 2xx means usable. */
  parseFile?(body: unknown): FileCheck;
  /**
   * Uploads a training/validation file to the provider's Files API (the provider's copy of a
   * file of the gateway's own Files API); absent: the provider cannot take one that way.
   */
  uploadFile?(e: Endpoint, file: { filename: string; bytes: Buffer }): UpstreamRequest;
  createJob(e: Endpoint, spec: JobSpec): CreateRequest;
  /**
   * Providers that keep the gateway's job id on their job (OpenAI's `metadata`): the
   * request that lists the jobs carrying it, so a submit retried after a lost answer finds
   * the job the provider did create instead of creating a second one.
   */
  findJobs?(e: Endpoint, gatewayJobId: string): UpstreamRequest;
  parseJobList?(body: unknown): ProviderJobState[];
  retrieveJob(e: Endpoint, providerJobId: string): UpstreamRequest;
  cancelJob(e: Endpoint, providerJobId: string): UpstreamRequest;
  /** A separate events request; absent when events come inside the job (or not at all). */
  listEvents?(e: Endpoint, providerJobId: string): UpstreamRequest;
  parseJob(body: unknown): ProviderJobState;
  /** Events from the `listEvents` response, or from the job body when there is no such request. */
  parseEvents(body: unknown): ProviderEvent[];
}

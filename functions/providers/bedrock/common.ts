/**
 * Bedrock pieces shared by chat, embeddings and rerank: hosts, the model id path segment,
 * auth (SigV4 via `sign`, or a Bedrock API key as Bearer) and JSON POSTs.
 */
import { badRequest } from '../../shared/errors';
import { awsCredentials, awsRegion, signSigV4 } from '../_shared/aws-sigv4';
import { rootUrl } from '../_shared/cloud-common';
import { jsonPost } from '../_shared/openai-shape';
import type { ProviderTarget, UpstreamRequest } from '../types';

/** Foundation ids, inference profiles (`us.…`) and ARNs (`arn:aws:bedrock:…:…/…`). */
const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._:/+-]{0,2047}$/;

export function validModelId(model: string, param = 'model'): string {
  const m = (model ?? '').trim();
  if (!MODEL_ID.test(m)) throw badRequest(`Invalid Bedrock model id '${m.slice(0, 120)}'.`, param, 'invalid_model');
  return m;
}

/** A cross-region inference profile's geography prefix (`us.`, `eu.`, `global.`, ...). */
const PROFILE_PREFIX = /^(?:us|us-gov|eu|apac|au|ca|jp|global)\./;

/** The foundation model an inference profile id names (`us.anthropic.claude-…` -> `anthropic.claude-…`); other ids unchanged. */
export const foundationModelId = (model: string): string => validModelId(model).replace(PROFILE_PREFIX, '');

/** The model id as one URL path segment: `:` -> `%3A`, an ARN's `/` -> `%2F`. */
export const modelSegment = (model: string): string => encodeURIComponent(validModelId(model));

/** bedrock-runtime root (or the custom host). */
export const runtimeRoot = (target: ProviderTarget): string => rootUrl(target, () => `https://bedrock-runtime.${awsRegion(target)}.amazonaws.com`);

/** The Bedrock control plane (ListFoundationModels), or the custom host. */
export const controlRoot = (target: ProviderTarget): string => rootUrl(target, () => `https://bedrock.${awsRegion(target)}.amazonaws.com`);

/** bedrock-agent-runtime root (rerank), or the custom host. */
export const agentRuntimeRoot = (target: ProviderTarget): string => rootUrl(target, () => `https://bedrock-agent-runtime.${awsRegion(target)}.amazonaws.com`);

/** `{}` with SigV4 credentials (`sign` adds them); a Bedrock API key goes in as Bearer. */
export function bedrockAuthHeaders(target: ProviderTarget): Record<string, string> {
  return awsCredentials(target) ? {} : { authorization: `Bearer ${target.apiKey!.trim()}` };
}

export const bedrockPost = (url: string, body: unknown, target: ProviderTarget): UpstreamRequest => jsonPost(url, body, bedrockAuthHeaders(target), target);

/** SigV4 (service `bedrock` for both runtime hosts) over any final request. */
export async function bedrockSign(req: UpstreamRequest, target: ProviderTarget): Promise<UpstreamRequest> {
  const credentials = awsCredentials(target);
  if (!credentials) return { ...req, headers: { ...req.headers, ...bedrockAuthHeaders(target) } };
  return signSigV4(req, { region: awsRegion(target), service: 'bedrock', credentials });
}

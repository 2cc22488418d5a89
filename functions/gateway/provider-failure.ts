/**
 * A provider's failed answer read (bounded) for what it says, for the routes that answer
 * every error in their own dialect (OpenAI-shaped chat and Responses, Messages, Gemini)
 * rather than passing the provider's body through. The body's shapes are read by
 * providers/_shared/error-body.ts.
 */
import { readBody } from '../shared/net/http-client';
import { providerErrorFactsOfText, type ProviderErrorFacts } from '../providers/_shared/error-body';
import type { UpstreamOutcome } from './routing';

/** A provider error body larger than this is not read for its message. */
const MAX_ERROR_BODY = 64 * 1024;

export interface ProviderFailure {
  status: number;
  message: string;
  /** The provider's `retry-after`, to pass on. */
  retryAfter?: string;
}

/** A provider's error answer, read (bounded) for what it says; a body that cannot be read says nothing. */
export async function readProviderError(upstream: UpstreamOutcome): Promise<{ raw: string } & ProviderErrorFacts> {
  const raw = await readBody(upstream.body, MAX_ERROR_BODY).then(
    (b) => b.toString('utf8'),
    () => '',
  );
  return { raw, ...providerErrorFactsOfText(raw) };
}

/** Status, message and `retry-after` of a failed provider answer; `provider` names it when the body says nothing. */
export async function readProviderFailure(upstream: UpstreamOutcome, provider: string): Promise<ProviderFailure> {
  const { message } = await readProviderError(upstream);
  const retryAfter = upstream.headers['retry-after'];
  return {
    status: upstream.status,
    message: message ?? `${provider} answered with status ${upstream.status}.`,
    ...(retryAfter !== undefined ? { retryAfter: String(retryAfter) } : {}),
  };
}

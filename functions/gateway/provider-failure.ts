/**
 * A provider's failed answer read for what it says, for the dialect routes (Messages,
 * Gemini) that answer every error in their own shape rather than passing the provider's
 * body through.
 */
import { readBody } from '../shared/net/http-client';
import type { UpstreamOutcome } from './routing';

/** A provider error body larger than this is not read for its message. */
const MAX_ERROR_BODY = 64 * 1024;

export interface ProviderFailure {
  status: number;
  message: string;
  /** The provider's `retry-after`, to pass on. */
  retryAfter?: string;
}

/** The message a provider's error body states (OpenAI, Anthropic, Gemini, Bedrock, Cohere, watsonx and Replicate shapes). */
export function providerMessage(raw: string): string | undefined {
  try {
    const body = JSON.parse(raw) as Record<string, unknown>;
    const error = body.error;
    if (error && typeof error === 'object' && typeof (error as { message?: unknown }).message === 'string') return (error as { message: string }).message;
    if (typeof error === 'string') return error;
    // watsonx: `{errors: [{code, message}], trace, status_code}`.
    const first = Array.isArray(body.errors) ? (body.errors[0] as { message?: unknown } | undefined) : undefined;
    if (typeof first?.message === 'string') return first.message;
    for (const key of ['message', 'Message', 'detail']) if (typeof body[key] === 'string') return body[key] as string;
  } catch {
    /* not JSON: the text itself, if short */
  }
  const text = raw.trim();
  return text && text.length <= 1000 ? text : undefined;
}

/** Read (at most MAX_ERROR_BODY of) a failed provider answer; `provider` names it when the body says nothing. */
export async function readProviderFailure(upstream: UpstreamOutcome, provider: string): Promise<ProviderFailure> {
  const raw = await readBody(upstream.body, MAX_ERROR_BODY).then(
    (b) => b.toString('utf8'),
    () => '',
  );
  const retryAfter = upstream.headers['retry-after'];
  return {
    status: upstream.status,
    message: providerMessage(raw) ?? `${provider} answered with status ${upstream.status}.`,
    ...(retryAfter !== undefined ? { retryAfter: String(retryAfter) } : {}),
  };
}

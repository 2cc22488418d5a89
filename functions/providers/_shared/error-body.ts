/**
 * What a provider's error body says, whatever its shape: the one reader of provider error
 * bodies, for every dialect the gateway answers in (OpenAI, Anthropic) and for stream
 * translators that meet an error mid-stream.
 *
 * Shapes: OpenAI, Gemini and Anthropic (`error.message`), watsonx
 * (`{errors: [{code, message}], trace, status_code}`), Bedrock and Cohere (`message` /
 * `Message`), Replicate and others (`detail`), a bare `error` string.
 */

export interface ProviderErrorFacts {
  message?: string;
  /** The provider's own error code, when its body names one as a string. */
  code?: string;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** The message and code of a parsed error body; an empty object when it states none. */
export function providerErrorFacts(body: unknown): ProviderErrorFacts {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return {};
  const b = body as Record<string, unknown>;
  const error = b.error;
  if (error && typeof error === 'object') {
    const e = error as Record<string, unknown>;
    const message = str(e.message);
    if (message) return { message, code: str(e.code) ?? str(e.status) };
  }
  if (str(error)) return { message: error as string };
  const first = Array.isArray(b.errors) ? (b.errors[0] as Record<string, unknown> | undefined) : undefined;
  if (first && typeof first === 'object' && str(first.message)) return { message: first.message as string, code: str(first.code) };
  for (const key of ['message', 'Message', 'detail']) if (str(b[key])) return { message: b[key] as string, code: str(b.code) };
  return {};
}

/** The longest non-JSON error text passed on as the message. */
const MAX_TEXT_MESSAGE = 1000;

/** The message and code of a raw error body: JSON read by shape, a short text as it is. */
export function providerErrorFactsOfText(raw: string): ProviderErrorFacts {
  try {
    return providerErrorFacts(JSON.parse(raw));
  } catch {
    const text = raw.trim();
    return text && text.length <= MAX_TEXT_MESSAGE ? { message: text } : {};
  }
}

/** The body is OpenAI's error shape already (`{error: {message, ...}}`): it is passed on as it is. */
export function isOpenAIErrorBody(raw: string): boolean {
  try {
    const body = JSON.parse(raw) as { error?: { message?: unknown } } | null;
    return Boolean(body?.error && typeof body.error === 'object' && typeof body.error.message === 'string');
  } catch {
    return false;
  }
}

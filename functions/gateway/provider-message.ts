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

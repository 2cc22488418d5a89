/**
 * What some OpenAI-shaped providers refuse in a chat request, as each documents it, for the
 * OpenAI fake: mounted under `/<provider slug>/…` (a custom host such as
 * `http://127.0.0.1:port/groq/v1`), the fake answers a request carrying a rejected field
 * with that provider's own error, as the real service would. Written from the providers'
 * documentation, independently of the gateway's declarations, so a gateway that forwarded
 * such a field would fail the table-driven test.
 */

export interface FakeParamRule {
  /** Models the provider refuses the fields for; absent: every model. */
  models?: RegExp;
  /** Top-level fields, or `messages[].name`. `n` is refused only above 1. */
  rejects: readonly string[];
  /** The provider's error reply for one rejected field. */
  reply(field: string, value: unknown): { status: number; body: unknown };
}

const openAIStyle = (message: string, param: string | null) => ({ error: { message, type: 'invalid_request_error', param, code: null } });

export const FAKE_PROVIDER_RULES: Record<string, readonly FakeParamRule[]> = {
  // https://console.groq.com/docs/openai: "will result in a 400 error if they are supplied"; N must be 1.
  groq: [
    {
      rejects: ['logprobs', 'top_logprobs', 'logit_bias', 'messages[].name', 'n'],
      reply: (field) => ({
        status: 400,
        body: openAIStyle(field === 'n' ? "'n' : number must be at most 1" : `'${field}' : property '${field}' is unsupported`, field),
      }),
    },
  ],
  // https://inference-docs.cerebras.ai/resources/openai#currently-unsupported-openai-features
  cerebras: [
    {
      rejects: ['frequency_penalty', 'logit_bias', 'presence_penalty', 'parallel_tool_calls', 'service_tier'],
      reply: (field) => ({
        status: 400,
        body: { message: `Unsupported parameter: ${field}`, type: 'invalid_request_error', param: field, code: 'wrong_api_format' },
      }),
    },
  ],
  // https://docs.x.ai/docs/guides/reasoning: reasoning models refuse presencePenalty, frequencyPenalty and stop.
  xai: [
    {
      models: /^grok-(?:3-mini|code|4(?!.*non-reasoning))/,
      rejects: ['presence_penalty', 'frequency_penalty', 'stop'],
      reply: (field) => ({
        status: 400,
        body: {
          code: 'Client specified an invalid argument',
          error: `Argument not supported on this model: ${field.replace(/_(\w)/g, (_, c: string) => c.toUpperCase())}`,
        },
      }),
    },
  ],
  // https://api-docs.deepseek.com/guides/reasoning_model: on deepseek-reasoner, logprobs and top_logprobs trigger an error.
  deepseek: [
    {
      models: /^deepseek-reasoner/,
      rejects: ['logprobs', 'top_logprobs'],
      reply: (field) => ({ status: 400, body: openAIStyle(`${field} is not supported with this model`, null) }),
    },
  ],
  // Mistral validates the body strictly: a field outside its schema is a 422 `extra_forbidden`.
  'mistral-ai': [
    {
      rejects: ['seed', 'max_completion_tokens', 'stream_options'],
      reply: (field, value) => ({
        status: 422,
        body: {
          object: 'error',
          message: { detail: [{ type: 'extra_forbidden', loc: ['body', field], msg: 'Extra inputs are not permitted', input: value }] },
          type: 'invalid_request_error',
          param: null,
          code: null,
        },
      }),
    },
  ],
};

/** The first rejected field a chat body carries for this provider, with the provider's reply. */
export function refusedByProvider(provider: string, body: Record<string, unknown>): { status: number; body: unknown } | undefined {
  for (const rule of FAKE_PROVIDER_RULES[provider] ?? []) {
    if (rule.models && !rule.models.test(String(body.model))) continue;
    for (const field of rule.rejects) {
      if (field === 'messages[].name') {
        const named = Array.isArray(body.messages) && body.messages.some((m) => m && typeof m === 'object' && 'name' in m);
        if (named) return rule.reply(field, undefined);
        continue;
      }
      const value = body[field];
      if (value === undefined) continue;
      if (field === 'n' && value === 1) continue;
      return rule.reply(field, value);
    }
  }
  return undefined;
}

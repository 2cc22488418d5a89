import { readBody, sendUpstream } from '../../shared/net/http-client';
import { assertSafeUrl } from '../../shared/net/ssrf';
import { config } from '../../shared/config';
import { z } from '../../shared/validation';
import { defineCheck } from './types';

/**
 * `default.webhook`: POSTs `{input, kind, metadata}` as JSON to `webhookURL` and uses the
 * answer's `verdict` (boolean; `explanation` string and `data` optional). The URL passes
 * the SSRF guard (assertSafeUrl, then the guarded DNS lookup of sendUpstream; redirects are
 * never followed). `timeout` (ms, default 3000) bounds the wait for the answer headers.
 * A non-2xx answer, an unreadable answer or a transport failure is an error (see
 * `failOnError`). `headers` are sent as given and never logged or echoed.
 */
const MAX_RESPONSE_BYTES = 1024 * 1024;

const headerName = z.string().check(z.regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/, 'expected an HTTP header name'));
const httpUrl = z.string().check(
  z.maxLength(2048),
  z.refine((v) => {
    try {
      const u = new URL(v);
      return (u.protocol === 'http:' || u.protocol === 'https:') && u.username === '' && u.password === '';
    } catch {
      return false;
    }
  }, 'expected an absolute http(s) URL without credentials'),
);

const answerSchema = z.object({
  verdict: z.boolean(),
  explanation: z.optional(z.string()),
  data: z.optional(z.unknown()),
});

export const webhook = defineCheck({
  id: 'default.webhook',
  parameters: z.strictObject({
    webhookURL: httpUrl,
    headers: z.optional(z.record(headerName, z.string().check(z.maxLength(8192), z.regex(/^[^\r\n\0]*$/, 'expected a header value without line breaks')))),
    timeout: z._default(z.int().check(z.gte(1), z.lte(60_000)), 3000),
  }),
  async run(input, params, ctx) {
    const trustedHosts = ctx.trustedHosts ?? config().trustedHosts;
    assertSafeUrl(params.webhookURL, { trustedHosts, param: 'webhookURL' });
    const body = JSON.stringify({ input: input.text, kind: input.kind, metadata: input.request.metadata });
    // `timeout` bounds the whole exchange: headers (timeoutMs) and the answer body (signal).
    const deadline = AbortSignal.timeout(params.timeout);
    const signal = ctx.signal ? AbortSignal.any([ctx.signal, deadline]) : deadline;
    const res = await sendUpstream({
      method: 'POST',
      url: params.webhookURL,
      headers: { ...params.headers, 'content-type': 'application/json', accept: 'application/json' },
      body,
      timeoutMs: params.timeout,
      signal,
      trustedHosts,
      param: 'webhookURL',
    });
    const raw = await readBody(res.body, MAX_RESPONSE_BYTES);
    if (res.status < 200 || res.status >= 300) throw new Error(`The webhook answered with status ${res.status}.`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw.toString('utf8'));
    } catch {
      throw new Error('The webhook answer is not JSON.');
    }
    const answer = answerSchema.safeParse(parsed);
    if (!answer.success) throw new Error('The webhook answer has no boolean `verdict`.');
    const { verdict, explanation, data } = answer.data;
    return {
      verdict,
      explanation: explanation ?? (verdict ? 'The webhook accepted the content.' : 'The webhook rejected the content.'),
      ...(data !== undefined ? { data } : {}),
    };
  },
});

import { isIP } from 'node:net';
import { config } from '../../shared/config';
import { GatewayError } from '../../shared/errors';
import { assertSafeUrl } from '../../shared/net/ssrf';
import { z } from '../../shared/validation';
import { defineCheck } from './types';

/**
 * `default.validUrls`: every http(s) URL in the text is well formed. Nothing is fetched or
 * resolved (a guardrail must not make the gateway call arbitrary hosts). `onlyDNS: true`
 * checks only that each URL parses and names a plausible DNS host or IP; the default
 * full check also applies the SSRF rules of the gateway (no credentials in the URL, no
 * private, loopback, link-local, metadata or internal hosts; GATEWAY_TRUSTED_HOSTS admitted).
 */
const URL_PATTERN = /\bhttps?:\/\/[^\s<>"'`{}|\\^]+/giu;
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const TLD = /^(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$/;

function hostReason(url: URL): string | null {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (isIP(host)) return null;
  if (host.length > 253) return 'the host name is too long';
  const labels = host.replace(/\.$/, '').split('.');
  if (labels.length < 2) return 'the host is not a fully qualified domain name';
  if (!labels.every((l) => LABEL.test(l))) return 'the host name is malformed';
  if (!TLD.test(labels.at(-1)!)) return 'the top-level domain is malformed';
  return null;
}

export function findUrls(text: string): string[] {
  return [...text.matchAll(URL_PATTERN)].map((m) => m[0].replace(/[.,;:!?)\]]+$/u, ''));
}

export const validUrls = defineCheck({
  id: 'default.validUrls',
  parameters: z.strictObject({ onlyDNS: z._default(z.boolean(), false) }),
  run(input, params, ctx) {
    const urls = [...new Set(findUrls(input.text))];
    if (urls.length === 0) return { verdict: true, explanation: 'The text contains no URLs.', data: { validUrls: [], invalidUrls: [] } };
    const trustedHosts = ctx.trustedHosts ?? config().trustedHosts;
    const invalid: Array<{ url: string; reason: string }> = [];
    for (const text of urls) {
      let url: URL;
      try {
        url = new URL(text);
      } catch {
        invalid.push({ url: text, reason: 'not a valid URL' });
        continue;
      }
      const reason = hostReason(url);
      if (reason) {
        invalid.push({ url: text, reason });
        continue;
      }
      if (!params.onlyDNS) {
        try {
          assertSafeUrl(text, { trustedHosts });
        } catch (err) {
          if (!(err instanceof GatewayError)) throw err;
          invalid.push({ url: text, reason: 'the host is private, internal or carries credentials' });
        }
      }
    }
    const bad = new Set(invalid.map((i) => i.url));
    return {
      verdict: invalid.length === 0,
      explanation: invalid.length === 0 ? `All ${urls.length} URLs are valid.` : `${invalid.length} of ${urls.length} URLs are invalid.`,
      data: { validUrls: urls.filter((u) => !bad.has(u)), invalidUrls: invalid },
    };
  },
});

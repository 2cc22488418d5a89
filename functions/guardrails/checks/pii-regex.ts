import { z } from '../../shared/validation';
import { defineCheck } from './types';

/**
 * `default.piiRegex`: finds personal data by pattern: e-mail addresses, phone numbers,
 * payment card numbers (13-19 digits that pass the Luhn check), US social security
 * numbers and IPv4 addresses. Without PII the check passes. With PII it fails, unless
 * `redact` is set: then every match is replaced by `[REDACTED_<CATEGORY>]`, the check
 * passes and returns the redacted text as `transformed`. Neither the explanation nor
 * `data` repeats a matched value (only counts per category).
 */
export const PII_CATEGORIES = ['email', 'phone', 'credit_card', 'ssn', 'ip_address'] as const;
export type PiiCategory = (typeof PII_CATEGORIES)[number];

export function luhnValid(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

const digitsOf = (s: string) => s.replace(/\D/g, '');

interface Detector {
  pattern: RegExp;
  valid?: (match: string) => boolean;
}

/** Applied in this order, so a card number is not also counted as a phone number. */
const DETECTORS: Record<PiiCategory, Detector> = {
  email: { pattern: /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g },
  credit_card: {
    pattern: /(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])/g,
    valid: (m) => {
      const d = digitsOf(m);
      return d.length >= 13 && d.length <= 19 && luhnValid(d);
    },
  },
  ssn: {
    pattern: /(?<![\d-])\d{3}-\d{2}-\d{4}(?![\d-])/g,
    valid: (m) => !/^(000|666|9\d\d)-|-00-|-0000$/.test(m),
  },
  ip_address: { pattern: /(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?!\.?\d)/g },
  phone: {
    pattern: /(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]?\d{2,4}){1,4}(?!\w)/g,
    valid: (m) => {
      const d = digitsOf(m);
      if (d.length < 7 || d.length > 15) return false;
      if (/^\d{4}-\d{2}-\d{2}$/.test(m)) return false; // an ISO date
      // Without a `+`, brackets or separators only a 10-15 digit run reads as a phone number.
      return /[+() .-]/.test(m) || d.length >= 10;
    },
  },
};
const ORDER: readonly PiiCategory[] = ['email', 'credit_card', 'ssn', 'ip_address', 'phone'];

export function scanPii(text: string, categories: readonly PiiCategory[]): { counts: Partial<Record<PiiCategory, number>>; redacted: string } {
  const counts: Partial<Record<PiiCategory, number>> = {};
  let working = text;
  for (const category of ORDER) {
    if (!categories.includes(category)) continue;
    const { pattern, valid } = DETECTORS[category];
    working = working.replace(pattern, (match) => {
      if (valid && !valid(match)) return match;
      counts[category] = (counts[category] ?? 0) + 1;
      return `[REDACTED_${category.toUpperCase()}]`;
    });
  }
  return { counts, redacted: working };
}

export const piiRegex = defineCheck({
  id: 'default.piiRegex',
  parameters: z.strictObject({
    categories: z._default(z.array(z.enum(PII_CATEGORIES)).check(z.minLength(1)), [...PII_CATEGORIES]),
    redact: z._default(z.boolean(), false),
  }),
  transforms: (params) => params.redact,
  run(input, params) {
    const { counts, redacted } = scanPii(input.text, params.categories);
    const found = Object.entries(counts).map(([c, n]) => `${n} ${c}`);
    if (found.length === 0) return { verdict: true, explanation: 'No PII found.', data: { detected: {} } };
    if (params.redact) {
      return { verdict: true, explanation: `Redacted PII: ${found.join(', ')}.`, data: { detected: counts, redacted: true }, transformed: redacted };
    }
    return { verdict: false, explanation: `Found PII: ${found.join(', ')}.`, data: { detected: counts, redacted: false } };
  },
});

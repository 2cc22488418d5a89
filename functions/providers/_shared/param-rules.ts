/**
 * Per-provider rules about OpenAI chat fields, declared beside an OpenAI-shaped provider:
 * fields the provider rejects (with a 400 or 422) and fields it takes under another name.
 * The gateway applies them before the request leaves, so a caller's OpenAI request never
 * reaches a provider with a field it refuses.
 *
 * A rejected field is either dropped or refused, following the convention of the table of
 * translated parameters (docs/usage.md, "Translated providers"): a field whose loss would change what the caller gets back
 * (more choices, log probabilities, token bias, stop sequences) is refused with a 400 naming
 * it; any other is dropped. A refused field set to its inert value (`n: 1`, `logprobs:
 * false`, an empty `logit_bias` or `stop`) is dropped instead: it asks for nothing.
 */
import { badRequest } from '../../shared/errors';
import type { ChatRequest, ParamRule } from '../types';

/** Whether a field asks for something: false for absent and inert values. */
function asksFor(field: string, value: unknown): boolean {
  if (value === undefined || value === null || value === false) return false;
  if (field === 'n') return typeof value !== 'number' || value > 1;
  if (typeof value === 'string') return value.length > 0;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === 'object') return Object.keys(value).length > 0;
  return true;
}

const MESSAGE_NAME = 'messages[].name';

function withoutMessageNames(messages: unknown): unknown {
  if (!Array.isArray(messages)) return messages;
  return messages.map((m) => {
    if (!m || typeof m !== 'object' || !('name' in m)) return m;
    const { name: _dropped, ...rest } = m as Record<string, unknown>;
    return rest;
  });
}

function remove(out: Record<string, unknown>, field: string): void {
  if (field === MESSAGE_NAME) out.messages = withoutMessageNames(out.messages);
  else delete out[field];
}

/** The chat body with the provider's rules applied; throws a 400 for a refused field that asks for something. */
export function applyParamRules(body: ChatRequest, rules: readonly ParamRule[], providerName: string): Record<string, unknown> {
  const out: Record<string, unknown> = { ...body };
  for (const rule of rules) {
    if (rule.models && !rule.models.test(String(body.model))) continue;
    const which = rule.models ? ` for model ${String(body.model).slice(0, 64)}` : '';
    for (const field of rule.refuse ?? []) {
      if (field !== MESSAGE_NAME && asksFor(field, out[field])) {
        throw badRequest(`${providerName} rejects \`${field}\`${which}: remove it.`, field, 'unsupported_parameter');
      }
      remove(out, field);
    }
    for (const field of rule.drop ?? []) remove(out, field);
    for (const [from, to] of Object.entries(rule.rename ?? {})) {
      if (!(from in out)) continue;
      if (out[to] === undefined && out[from] !== undefined) out[to] = out[from];
      delete out[from];
    }
  }
  return out;
}

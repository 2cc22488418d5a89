import { badRequest, GatewayError } from '../shared/errors';
import type { CheckContext, CheckResult } from './checks';
import { BoundedMap } from './checks/util';
import { compileChecks, denies, parseDefinition, type CompiledCheck, type CompiledGuardrail } from './definition';
import { resolveGuardrail } from './store';
import type { GuardrailActions, GuardrailInput } from './types';

export type { GuardrailInput } from './types';

/**
 * Evaluation of guardrails against one input or output (called by the pipeline).
 *
 * - A ref is a stored guardrail (id or slug; the latest version, through a short per-container
 *   cache) or an inline object `{checks, actions}` validated like a stored one. The
 *   Portkey-style shorthand `{"default.contains": {...}, "deny": true}` is accepted too.
 * - Every check of every guardrail runs in parallel. Checks that transform the text (PII
 *   redaction) run in order, each on the previous one's output, so transformations chain.
 * - A check that throws counts as passed with an `error` note, or as failed when its
 *   parameters say `failOnError: true` — that rule lives here only.
 * - A guardrail fails when any of its checks fails. The outcome is `block` when a failing
 *   guardrail denies (`actions.onFail: block` or `actions.deny: true`), `warn` when only
 *   non-denying guardrails (`log` / `warn`) failed, `pass` otherwise.
 */

export interface CheckOutcome {
  id: string;
  verdict: boolean;
  explanation?: string;
  /** Present when the check threw; `verdict` then follows failOnError. */
  error?: string;
  data?: unknown;
  execution_time_ms: number;
}

export interface HookResult {
  id: string;
  type: 'guardrail';
  verdict: boolean;
  /** Whether this guardrail blocks the request when it fails. */
  deny: boolean;
  checks: CheckOutcome[];
  /** The text after this guardrail's transformations, when it made any. */
  transformed?: string;
}

export interface GuardrailOutcome {
  verdict: 'pass' | 'warn' | 'block';
  hook_results: HookResult[];
  /** The text after every transformation, when any check transformed it. */
  transformedText?: string;
  /** `actions.message` of the first failing guardrail that set one (blocking ones first). */
  message?: string;
}

export interface EvaluateOptions {
  signal?: AbortSignal;
  /** Hosts the webhook and JWKS fetches may reach although private; default GATEWAY_TRUSTED_HOSTS. */
  trustedHosts?: readonly string[];
  /** Name of the caller's field that held the refs, for 400s about inline guardrails. */
  param?: string;
}

const MAX_ERROR_LENGTH = 500;

// Versions are immutable, so a compiled stored guardrail is valid for as long as it is kept.
const compiledVersions = new BoundedMap<string, CompiledGuardrail>(1000);
const compiledInline = new BoundedMap<string, CompiledGuardrail>(500);

async function loadStored(workspaceId: string, ref: string, param: string): Promise<CompiledGuardrail> {
  const stored = await resolveGuardrail(workspaceId, ref);
  if (!stored) throw badRequest(`No guardrail '${ref.slice(0, 128)}' in this workspace.`, param, 'guardrail_not_found');
  let compiled = compiledVersions.get(stored.version_id);
  if (!compiled) {
    compiled = { id: stored.id, checks: compileChecks(stored.checks), actions: stored.actions };
    compiledVersions.set(stored.version_id, compiled);
  }
  return compiled;
}

/** `{checks, actions}` as is; otherwise the shorthand: keys with a dot are checks, `deny` decides. */
function normaliseInline(ref: Record<string, unknown>): unknown {
  if ('checks' in ref || 'actions' in ref) return ref;
  const checks = Object.entries(ref)
    .filter(([key]) => key.includes('.'))
    .map(([id, parameters]) => ({ id, parameters: parameters ?? {} }));
  const actions: Record<string, unknown> = { onFail: ref.deny === true ? 'block' : 'log' };
  if (typeof ref.message === 'string') actions.message = ref.message;
  return { checks, actions };
}

function compileInline(ref: Record<string, unknown>, root: string, index: number): CompiledGuardrail {
  const key = JSON.stringify(ref);
  let compiled = compiledInline.get(key);
  if (!compiled) {
    const { definition, checks } = parseDefinition(normaliseInline(ref), root);
    compiled = { id: '', checks, actions: definition.actions };
    compiledInline.set(key, compiled);
  }
  // The id depends on the position, so it is not part of what is cached.
  const id = typeof ref.id === 'string' && ref.id ? ref.id.slice(0, 128) : `inline_${index}`;
  return { ...compiled, id };
}

function describeError(err: unknown): string {
  const text = err instanceof Error ? err.message || err.name : 'unknown error';
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH)}...` : text;
}

interface RanCheck extends CheckOutcome {
  transformed?: string;
}

async function runCheck(c: CompiledCheck, input: GuardrailInput, ctx: CheckContext): Promise<RanCheck> {
  const started = performance.now();
  const elapsed = () => Math.round((performance.now() - started) * 100) / 100;
  let result: CheckResult;
  try {
    result = await c.check.run(input, c.params, ctx);
  } catch (err) {
    return {
      id: c.id,
      verdict: !c.failOnError,
      explanation: c.failOnError
        ? 'The check could not run; it counts as failed (failOnError).'
        : 'The check could not run; it counts as passed (set failOnError to fail instead).',
      error: describeError(err),
      execution_time_ms: elapsed(),
    };
  }
  return {
    id: c.id,
    verdict: result.verdict === true,
    ...(result.explanation !== undefined ? { explanation: result.explanation } : {}),
    ...(result.data !== undefined ? { data: result.data } : {}),
    ...(typeof result.transformed === 'string' ? { transformed: result.transformed } : {}),
    execution_time_ms: elapsed(),
  };
}

export async function evaluateGuardrails(
  refs: Array<string | Record<string, unknown>>,
  workspaceId: string,
  input: GuardrailInput,
  options: EvaluateOptions = {},
): Promise<GuardrailOutcome> {
  const param = options.param ?? 'guardrails';
  const guardrails = await Promise.all(
    refs.map((ref, i) => (typeof ref === 'string' ? loadStored(workspaceId, ref, param) : Promise.resolve(compileInline(ref, `${param}[${i}]`, i)))),
  );
  const ctx: CheckContext = { signal: options.signal, trustedHosts: options.trustedHosts };

  // Result slots, per guardrail and check, filled by the two groups below.
  const results: RanCheck[][] = guardrails.map((g) => new Array<RanCheck>(g.checks.length));
  const transformers: Array<{ g: number; c: number }> = [];
  const parallel: Array<Promise<void>> = [];
  guardrails.forEach((g, gi) =>
    g.checks.forEach((c, ci) => {
      if (c.check.transforms?.(c.params)) transformers.push({ g: gi, c: ci });
      else parallel.push(runCheck(c, input, ctx).then((r) => void (results[gi]![ci] = r)));
    }),
  );
  let text = input.text;
  let transformedAny = false;
  const lastTransform = new Map<number, string>();
  const chain = (async () => {
    for (const { g, c } of transformers) {
      const r = await runCheck(guardrails[g]!.checks[c]!, { ...input, text }, ctx);
      results[g]![c] = r;
      if (r.transformed !== undefined) {
        text = r.transformed;
        transformedAny = true;
        lastTransform.set(g, text);
      }
    }
  })();
  await Promise.all([...parallel, chain]);

  const hookResults: HookResult[] = guardrails.map((g, gi) => {
    const checks = results[gi]!.map(({ transformed: _t, ...outcome }) => outcome);
    const transformed = lastTransform.get(gi);
    return {
      id: g.id,
      type: 'guardrail',
      verdict: checks.every((c) => c.verdict),
      deny: denies(g.actions),
      checks,
      ...(transformed !== undefined ? { transformed } : {}),
    };
  });
  const failed = guardrails.map((g, i) => ({ actions: g.actions, hook: hookResults[i]! })).filter((x) => !x.hook.verdict);
  const blocking = failed.filter((x) => x.hook.deny);
  const verdict = blocking.length ? 'block' : failed.length ? 'warn' : 'pass';
  const message = firstMessage(blocking.map((x) => x.actions)) ?? firstMessage(failed.map((x) => x.actions));
  return {
    verdict,
    hook_results: hookResults,
    ...(transformedAny ? { transformedText: text } : {}),
    ...(message !== undefined ? { message } : {}),
  };
}

const firstMessage = (actions: GuardrailActions[]) => actions.find((a) => a.message)?.message;

/** The 446 for a blocked outcome: the OpenAI error shape plus `hook_results`. */
export function guardrailError(outcome: GuardrailOutcome): GatewayError {
  const blocking = outcome.hook_results.find((h) => !h.verdict && h.deny) ?? outcome.hook_results.find((h) => !h.verdict);
  const failedChecks = blocking?.checks.filter((c) => !c.verdict).map((c) => c.id) ?? [];
  const fallback = blocking
    ? `The request was blocked by guardrail '${blocking.id}': ${failedChecks.join(', ') || 'a check'} failed.`
    : 'The request was blocked by a guardrail.';
  return new GatewayError(
    446,
    'guardrail_error',
    outcome.message ?? fallback,
    null,
    'guardrail_blocked',
    {},
    {
      hook_results: outcome.hook_results,
    },
  );
}

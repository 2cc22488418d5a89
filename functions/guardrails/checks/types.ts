import type { z } from '../../shared/validation';
import type { GuardrailInput } from '../types';

export interface CheckContext {
  /** Aborts outbound work (webhook, JWKS) when the request is gone. */
  signal?: AbortSignal;
  /** Hosts admitted by the SSRF guard; default config().trustedHosts (GATEWAY_TRUSTED_HOSTS). */
  trustedHosts?: readonly string[];
}

export interface CheckResult {
  /** true = the check passed. */
  verdict: boolean;
  explanation?: string;
  data?: unknown;
  /** The text with a transformation applied (e.g. PII redacted). */
  transformed?: string;
}

/**
 * One check kind: `default.<name>`, a zod/mini schema for its parameters (parsed when a
 * guardrail is written and again when it is compiled for evaluation) and `run`.
 * Throwing from `run` is an error, not a verdict: the evaluator applies `failOnError`.
 */
export interface GuardrailCheck<P = unknown> {
  id: string;
  parameters: z.ZodMiniType<P>;
  /** True when `run` may return `transformed` for these parameters (run in order, chained). */
  transforms?: (params: P) => boolean;
  run(input: GuardrailInput, params: P, ctx: CheckContext): CheckResult | Promise<CheckResult>;
}

/** A check whose parameter type is erased, for the registry. */
// biome-ignore lint/suspicious/noExplicitAny: the registry holds checks of every parameter type
export type AnyCheck = GuardrailCheck<any>;

/** Type the `run` parameters from the schema. */
export function defineCheck<S extends z.ZodMiniType>(check: {
  id: string;
  parameters: S;
  transforms?: (params: z.output<S>) => boolean;
  run(input: GuardrailInput, params: z.output<S>, ctx: CheckContext): CheckResult | Promise<CheckResult>;
}): GuardrailCheck<z.output<S>> {
  return check as GuardrailCheck<z.output<S>>;
}

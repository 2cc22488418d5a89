import { badRequest, type GatewayError } from '../shared/errors';
import { parseInput, validationError, z } from '../shared/validation';
import { CHECK_IDS, getCheck, type AnyCheck } from './checks';
import type { CheckSpec, GuardrailActions, GuardrailDefinition } from './types';

/**
 * The shape of a guardrail definition and its compilation: every check id
 * must be known and its parameters must pass the check's schema. Errors are 400s that
 * name the check (`checks[1]`, `default.regexMatch`) and the parameter.
 */
export const MAX_CHECKS = 50;

export const checkSpecSchema = z.strictObject({
  id: z.string().check(z.minLength(1), z.maxLength(128)),
  parameters: z._default(z.record(z.string(), z.unknown()), () => ({})),
});

export const actionsSchema = z.strictObject({
  onFail: z.enum(['block', 'log', 'warn']),
  message: z.optional(z.string().check(z.maxLength(1000))),
  deny: z.optional(z.boolean()),
});

export const checksSchema = z.array(checkSpecSchema).check(z.minLength(1), z.maxLength(MAX_CHECKS));

/** A check ready to run: the check kind, its parsed parameters and the error rule. */
export interface CompiledCheck {
  id: string;
  check: AnyCheck;
  params: unknown;
  /** An exception in the check counts as a failure (true) or as a pass with a note (false). */
  failOnError: boolean;
}

export interface CompiledGuardrail {
  id: string;
  checks: CompiledCheck[];
  actions: GuardrailActions;
}

const failOnErrorSchema = z.optional(z.boolean());

function wrap(err: GatewayError, where: string, checkId: string): GatewayError {
  return badRequest(`Check \`${where}\` (${checkId}): ${err.message}`, err.param, err.code);
}

/** Compile one check spec at `checks[index]` (root names the array, e.g. `checks`). */
export function compileCheck(spec: CheckSpec, index: number, root = 'checks'): CompiledCheck {
  const where = `${root}[${index}]`;
  const check = getCheck(spec.id);
  if (!check) {
    throw badRequest(
      `Invalid \`${where}.id\`: unknown check '${spec.id.slice(0, 128)}'. Known checks: ${CHECK_IDS.join(', ')}.`,
      `${where}.id`,
      'unknown_check',
    );
  }
  const { failOnError, ...rest } = spec.parameters;
  const foe = failOnErrorSchema.safeParse(failOnError);
  if (!foe.success) throw wrap(validationError(foe.error.issues, `${where}.parameters.failOnError`), where, spec.id);
  const parsed = check.parameters.safeParse(rest);
  if (!parsed.success) throw wrap(validationError(parsed.error.issues, `${where}.parameters`), where, spec.id);
  return { id: spec.id, check, params: parsed.data, failOnError: foe.data ?? false };
}

export function compileChecks(checks: readonly CheckSpec[], root = 'checks'): CompiledCheck[] {
  return checks.map((c, i) => compileCheck(c, i, root));
}

/**
 * Validate a full definition (shape, then every check); `root` prefixes field names (e.g.
 * `input_guardrails[0]`). Unknown top-level fields (an inline guardrail's `id`, `name`) are ignored.
 */
export function parseDefinition(input: unknown, root = ''): { definition: GuardrailDefinition; checks: CompiledCheck[] } {
  const body = parseInput(z.looseObject({ checks: checksSchema, actions: actionsSchema }), input, root);
  const checks = compileChecks(body.checks, root ? `${root}.checks` : 'checks');
  return { definition: { checks: body.checks, actions: body.actions }, checks };
}

/** Whether a guardrail's failure blocks the request. */
export const denies = (actions: GuardrailActions) => actions.onFail === 'block' || actions.deny === true;

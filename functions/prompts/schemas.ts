import { badRequest } from '../shared/errors';
import { MANAGED_PROVIDER_SLUG } from '../shared/stores/providers';
import { parseInput, z } from '../shared/validation';
import type { VersionFields } from './types';

/** Request bodies of the prompt routes, validated with zod/mini. */

/** A version is one DynamoDB item (400 KB); the template text gets most of it. */
export const MAX_TEMPLATE_BYTES = 200 * 1024;
export const MAX_VERSION_BYTES = 350 * 1024;

const text = (max: number) => z.string().check(z.minLength(1), z.maxLength(max));
const object = z.record(z.string(), z.unknown());
const objects = z.array(object).check(z.maxLength(128));
const nullable = <T extends z.ZodMiniType>(schema: T) => z.optional(z.nullable(schema));

const template = z.string().check(
  z.minLength(1),
  z.refine((v) => Buffer.byteLength(v, 'utf8') <= MAX_TEMPLATE_BYTES, `must be at most ${MAX_TEMPLATE_BYTES} bytes`),
);

/** A managed provider slug; the `@slug` form is accepted and stored without the `@`. */
const virtualKey = z
  .pipe(
    z.string().check(z.maxLength(65)),
    z.transform((v) => (v.startsWith('@') ? v.slice(1) : v)),
  )
  .check(z.refine((v) => MANAGED_PROVIDER_SLUG.test(v), 'expected a managed provider slug (`slug` or `@slug`)'));

const versionShape = {
  string: z.optional(template),
  parameters: z.optional(object),
  model: z.optional(text(256)),
  virtual_key: nullable(virtualKey),
  version_description: nullable(z.string().check(z.maxLength(2048))),
  functions: nullable(objects),
  tools: nullable(objects),
  tool_choice: nullable(z.union([text(64), object])),
  is_raw_template: z.optional(z.union([z.literal(0), z.literal(1)])),
  prompt_metadata: nullable(object),
};

const createSchema = z.strictObject({
  name: z.optional(text(256)),
  collection_id: nullable(text(128)),
  ...versionShape,
});

const updateSchema = z.strictObject({
  patch: z.optional(z.boolean()),
  name: z.optional(text(256)),
  collection_id: nullable(text(128)),
  ...versionShape,
});

export type CreateBody = z.infer<typeof createSchema>;
export type UpdateBody = z.infer<typeof updateSchema>;
export type VersionInput = Pick<UpdateBody, keyof typeof versionShape>;

/** The fields a runnable template needs, named in one 400 when absent. */
function requireFields(body: Record<string, unknown>, names: readonly string[], context: string): void {
  const missing = names.filter((n) => body[n] === undefined || body[n] === null);
  if (missing.length) {
    throw badRequest(`Missing required field(s)${context}: ${missing.join(', ')}.`, missing[0]!, 'missing_required_field');
  }
}

export function parseCreateBody(input: unknown): CreateBody & { name: string; string: string; parameters: Record<string, unknown>; model: string } {
  const body = parseInput(createSchema, input);
  requireFields(body, ['name', 'string', 'parameters', 'model'], '');
  return body as ReturnType<typeof parseCreateBody>;
}

export function parseUpdateBody(input: unknown): UpdateBody {
  const body = parseInput(updateSchema, input);
  if (body.patch !== true) {
    requireFields(body, ['string', 'parameters', 'model'], ' for a new version (send `patch: true` to keep the latest version’s values)');
  }
  return body;
}

/**
 * The fields of a new version. With `base` (a patch), absent fields come from it and a
 * null clears an optional one; without it (strict), absent optional fields are empty.
 */
export function versionFields(body: VersionInput, base?: VersionFields): VersionFields {
  const pick = <K extends keyof VersionFields>(key: K, empty: VersionFields[K]): VersionFields[K] => {
    const value = body[key as keyof VersionInput] as VersionFields[K] | null | undefined;
    if (value !== undefined) return value ?? empty;
    return base ? base[key] : empty;
  };
  return {
    string: pick('string', ''),
    parameters: pick('parameters', {}),
    model: pick('model', ''),
    virtual_key: pick('virtual_key', null),
    version_description: pick('version_description', null),
    functions: pick('functions', null),
    tools: pick('tools', null),
    tool_choice: pick('tool_choice', null),
    is_raw_template: pick('is_raw_template', 0),
    prompt_metadata: pick('prompt_metadata', null),
  };
}

/** Keys that can never be hyperparameters of a render or run. */
function checkRunKeys(body: Record<string, unknown>): void {
  if (body.messages !== undefined) {
    throw badRequest('Invalid `messages`: the messages come from the template; send `variables` instead.', 'messages', 'invalid_value');
  }
  for (const nested of ['parameters', 'hyperparameters']) {
    if (body[nested] !== undefined) {
      throw badRequest(
        `Invalid \`${nested}\`: hyperparameters go at the root level of the body, beside \`variables\` (e.g. {"variables": {...}, "temperature": 0.2}).`,
        nested,
        'invalid_value',
      );
    }
  }
}

const int = (min: number) => nullable(z.int().check(z.gte(min)));
const num = nullable(z.number());

/**
 * Render and run bodies: `variables` (required), `stream`, and chat-completion
 * hyperparameters at the root. The common ones are type-checked; others pass through to
 * the provider, as on /v1/chat/completions.
 */
const runSchema = z.looseObject({
  variables: object,
  stream: z.optional(z.boolean()),
  model: z.optional(text(256)),
  temperature: num,
  top_p: num,
  frequency_penalty: num,
  presence_penalty: num,
  max_tokens: int(1),
  max_completion_tokens: int(1),
  n: int(1),
  seed: nullable(z.int()),
  logprobs: nullable(z.boolean()),
  top_logprobs: int(0),
  stop: nullable(z.union([z.string(), z.array(z.string())])),
  user: z.optional(z.string()),
  tools: nullable(objects),
  functions: nullable(objects),
  tool_choice: nullable(z.union([text(64), object])),
  stream_options: nullable(object),
});

export type RunBody = z.infer<typeof runSchema>;

export function parseRunBody(input: unknown): RunBody {
  const body = parseInput(runSchema, input);
  checkRunKeys(body);
  return body;
}

/** The body schemas, for the OpenAPI document (infra/openapi). */
export { createSchema, updateSchema };

/** The body schema, for the OpenAPI document (infra/openapi). */
export { runSchema };

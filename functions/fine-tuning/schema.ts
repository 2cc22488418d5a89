/**
 * `POST /v1/fine_tuning/jobs`,
 * validated with zod/mini: a 400 names the field and the rule. `null` counts as absent (the
 * SDKs send it for unset options). `method` defaults to supervised with every
 * hyperparameter `auto`; the deprecated top-level `hyperparameters` is accepted for
 * supervised jobs.
 */
import { badRequest } from '../shared/errors';
import { escapesBase } from '../shared/path-segment';
import { parseInput, z } from '../shared/validation';
import type { DpoHyperparameters, Hyperparameters, Method, WandbIntegration } from './types';

const auto = z.literal('auto');
const hyperparameterFields = {
  n_epochs: z.optional(z.union([auto, z.int().check(z.gte(1), z.lte(50))])),
  batch_size: z.optional(z.union([auto, z.int().check(z.gte(1), z.lte(256))])),
  learning_rate_multiplier: z.optional(z.union([auto, z.number().check(z.gt(0), z.lte(10))])),
};
const supervisedHyperparameters = z.strictObject(hyperparameterFields);
const dpoHyperparameters = z.strictObject({ ...hyperparameterFields, beta: z.optional(z.union([auto, z.number().check(z.gt(0), z.lte(2))])) });

const method = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('supervised'),
    supervised: z.optional(z.strictObject({ hyperparameters: z.optional(supervisedHyperparameters) })),
  }),
  z.strictObject({
    type: z.literal('dpo'),
    dpo: z.optional(z.strictObject({ hyperparameters: z.optional(dpoHyperparameters) })),
  }),
]);

const integration = z.strictObject({
  type: z.literal('wandb'),
  wandb: z.strictObject({
    project: z.string().check(z.minLength(1), z.maxLength(256)),
    name: z.optional(z.nullable(z.string().check(z.maxLength(256)))),
    entity: z.optional(z.nullable(z.string().check(z.maxLength(256)))),
    tags: z.optional(z.array(z.string().check(z.minLength(1), z.maxLength(64))).check(z.maxLength(50))),
  }),
});

/** The API contract / OpenAI metadata: 16 pairs, keys up to 64 characters, values up to 512. */
export const metadataSchema = z
  .record(z.string().check(z.minLength(1), z.maxLength(64)), z.string().check(z.maxLength(512)))
  .check(z.refine((m) => Object.keys(m).length <= 16, 'expected at most 16 key-value pairs'));

const fileId = z.string().check(
  z.minLength(1),
  z.maxLength(512),
  z.refine((v) => !escapesBase(v), "a file id, not '.', '..' or text that decodes to a path separator"),
);

export const createJobSchema = z.strictObject({
  model: z.string().check(z.minLength(1), z.maxLength(256)),
  training_file: fileId,
  validation_file: z.optional(fileId),
  suffix: z.optional(z.string().check(z.minLength(1), z.maxLength(64), z.regex(/^[A-Za-z0-9._-]+$/, 'expected letters, digits, `.`, `_` and `-`'))),
  seed: z.optional(z.int().check(z.gte(0), z.lte(2_147_483_647))),
  method: z.optional(method),
  hyperparameters: z.optional(supervisedHyperparameters),
  /** At most 5 integrations. */
  integrations: z.optional(z.array(integration).check(z.maxLength(5))),
  metadata: z.optional(metadataSchema),
});

export interface CreateJobInput {
  model: string;
  training_file: string;
  validation_file: string | null;
  suffix: string | null;
  seed: number | undefined;
  method: Method;
  integrations: WandbIntegration[] | null;
  metadata: Record<string, string> | null;
}

function withoutNulls(input: unknown): unknown {
  if (!input || typeof input !== 'object' || Array.isArray(input)) return input;
  return Object.fromEntries(Object.entries(input).filter(([, v]) => v !== null));
}

const fill = <T extends object>(given: T | undefined): Hyperparameters & T =>
  ({ n_epochs: 'auto', batch_size: 'auto', learning_rate_multiplier: 'auto', ...given }) as Hyperparameters & T;

export function parseCreateJob(body: unknown): CreateJobInput {
  const b = parseInput(createJobSchema, withoutNulls(body));
  if (b.method && b.hyperparameters) {
    throw badRequest('Send `method` or the deprecated `hyperparameters`, not both.', 'hyperparameters', 'invalid_value');
  }
  let m: Method;
  if (b.method?.type === 'dpo') {
    const hp = fill(b.method.dpo?.hyperparameters) as DpoHyperparameters;
    m = { type: 'dpo', dpo: { hyperparameters: { ...hp, beta: hp.beta ?? 'auto' } } };
  } else {
    const given = b.method?.type === 'supervised' ? b.method.supervised?.hyperparameters : b.hyperparameters;
    m = { type: 'supervised', supervised: { hyperparameters: fill(given) } };
  }
  return {
    model: b.model,
    training_file: b.training_file,
    validation_file: b.validation_file ?? null,
    suffix: b.suffix ?? null,
    seed: b.seed,
    method: m,
    integrations: (b.integrations as WandbIntegration[] | undefined) ?? null,
    metadata: b.metadata ?? null,
  };
}

/** `metadata[key]=value` query parameters of the list route. */
export function metadataFilter(query: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(query)) {
    const m = /^metadata\[(.{1,64})\]$/.exec(k);
    if (m) out[m[1]!] = v;
  }
  if (Object.keys(out).length > 16) throw badRequest('Filter on at most 16 metadata keys.', 'metadata', 'invalid_value');
  return out;
}

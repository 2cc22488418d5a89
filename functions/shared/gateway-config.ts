import * as z from 'zod/mini';
import { overrideParamsSchema } from './chat-schema';
import { queryProblems } from './routing-conditions';
import { CLOUD_SETTING_FIELDS, type CloudSettingField, type ProviderSettingValues } from './provider-table';
import { validationError } from './validation';

/**
 * The gateway config: inline in `x-gateway-config` or saved with the admin
 * configs API. A node either names a provider (a leaf) or holds `targets` with a
 * `strategy`; settings on a parent are inherited by its children unless they override.
 */
const statusCodes = z.array(z.int().check(z.gte(100), z.lte(599))).check(z.maxLength(50));

const retrySchema = z.strictObject({
  attempts: z.int().check(z.gte(0), z.lte(5)),
  on_status_codes: z.optional(statusCodes),
  use_retry_after_header: z.optional(z.boolean()),
});

const cacheSchema = z.strictObject({
  mode: z.enum(['simple']),
  max_age: z.optional(z.int().check(z.gte(60), z.lte(90 * 24 * 3600))),
});

// Open on purpose: an inline guardrail definition (checked by the guardrails module) and
// `override_params` (any provider body parameter, those the gateway reads in their request
// shapes: chat-schema.ts). Every other object here is strict.
const guardrailRef = z.union([z.string().check(z.minLength(1)), z.record(z.string(), z.unknown())]);

type Condition = Record<string, unknown>;
const conditionSchema: z.ZodMiniType<Condition> = z.record(z.string(), z.unknown());

const strategySchema = z.strictObject({
  mode: z.enum(['single', 'fallback', 'loadbalance', 'conditional']),
  on_status_codes: z.optional(statusCodes),
  conditions: z.optional(z.array(z.strictObject({ query: conditionSchema, then: z.string().check(z.minLength(1)) })).check(z.maxLength(100))),
  default: z.optional(z.string()),
});

const leafFields = {
  provider: z.optional(z.string().check(z.minLength(1), z.maxLength(64))),
  virtual_key: z.optional(z.string().check(z.minLength(1), z.maxLength(128))),
  api_key: z.optional(z.string().check(z.maxLength(8192))),
  custom_host: z.optional(z.string().check(z.maxLength(2048))),
  // Cloud settings: any string here; the adapter checks each against its pattern.
  ...(Object.fromEntries(CLOUD_SETTING_FIELDS.map((f) => [f, z.optional(z.string())])) as Record<CloudSettingField, z.ZodMiniOptional<z.ZodMiniString>>),
};

const sharedFields = {
  name: z.optional(z.string().check(z.minLength(1), z.maxLength(128))),
  weight: z.optional(z.number().check(z.gte(0))),
  override_params: z.optional(overrideParamsSchema),
  retry: z.optional(retrySchema),
  request_timeout: z.optional(z.int().check(z.gte(1), z.lte(900_000))),
  cache: z.optional(cacheSchema),
  forward_headers: z.optional(z.array(z.string()).check(z.maxLength(50))),
  input_guardrails: z.optional(z.array(guardrailRef).check(z.maxLength(20))),
  output_guardrails: z.optional(z.array(guardrailRef).check(z.maxLength(20))),
};

export interface ConfigNode extends ProviderSettingValues {
  strategy?: z.infer<typeof strategySchema>;
  targets?: ConfigNode[];
  provider?: string;
  virtual_key?: string;
  name?: string;
  weight?: number;
  override_params?: Record<string, unknown>;
  retry?: z.infer<typeof retrySchema>;
  request_timeout?: number;
  cache?: z.infer<typeof cacheSchema>;
  forward_headers?: string[];
  input_guardrails?: Array<string | Record<string, unknown>>;
  output_guardrails?: Array<string | Record<string, unknown>>;
}

const nodeSchema: z.ZodMiniType<ConfigNode> = z.strictObject({
  strategy: z.optional(strategySchema),
  get targets() {
    return z.optional(z.array(nodeSchema).check(z.minLength(1), z.maxLength(50)));
  },
  ...leafFields,
  ...sharedFields,
});

export type GatewayConfigSpec = ConfigNode;

const MAX_DEPTH = 5;

/** Rules zod cannot express: every node is a leaf or has targets, names resolve, depth. */
function checkTree(node: ConfigNode, path: string, depth: number, problems: Array<{ path: PropertyKey[]; message: string }>) {
  const at = (suffix: string) => (path ? `${path}.${suffix}` : suffix).split('.');
  if (depth > MAX_DEPTH) problems.push({ path: path.split('.'), message: `targets nest deeper than ${MAX_DEPTH} levels` });
  const isLeaf = Boolean(node.provider || node.virtual_key);
  if (node.targets && isLeaf) problems.push({ path: at('targets'), message: 'a target names either a provider or nested targets, not both' });
  if (!node.targets && !isLeaf) {
    problems.push({
      path: path ? path.split('.') : ['provider'],
      message: 'each target needs `provider` (a slug or @managed-provider) or `virtual_key`, or nested `targets`',
    });
  }
  const mode = node.strategy?.mode;
  if (node.targets) {
    if (mode === 'conditional') {
      const names = new Set(node.targets.map((t) => t.name).filter(Boolean));
      const conditions = node.strategy?.conditions ?? [];
      if (!conditions.length) problems.push({ path: at('strategy.conditions'), message: 'conditional mode needs at least one condition' });
      conditions.forEach((c, i) => {
        problems.push(...queryProblems(c.query, [...at('strategy.conditions'), String(i), 'query']));
        if (!names.has(c.then)) problems.push({ path: at(`strategy.conditions.${i}.then`), message: `no target is named '${c.then}'` });
      });
      const def = node.strategy?.default;
      if (def !== undefined && !names.has(def)) problems.push({ path: at('strategy.default'), message: `no target is named '${def}'` });
    }
    if (mode === 'loadbalance' && node.targets.every((t) => (t.weight ?? 1) === 0)) {
      problems.push({ path: at('targets'), message: 'loadbalance needs at least one target with weight > 0' });
    }
    node.targets.forEach((child, i) => checkTree(child, `${path ? `${path}.` : ''}targets.${i}`, depth + 1, problems));
  }
}

/** Validate a config (already parsed JSON); a 400 names the JSON path of every problem. */
export function parseGatewayConfig(input: unknown, root = 'config'): GatewayConfigSpec {
  const result = nodeSchema.safeParse(input);
  if (!result.success) throw validationError(result.error.issues as never, root);
  const problems: Array<{ path: PropertyKey[]; message: string }> = [];
  checkTree(result.data, '', 0, problems);
  if (problems.length) {
    throw validationError(
      problems.map((p) => ({ path: p.path.map((s) => (typeof s === 'string' && /^\d+$/.test(s) ? Number(s) : s)), message: p.message })),
      root,
    );
  }
  return result.data;
}

/** The config schema, for the OpenAPI document (infra/openapi). */
export { nodeSchema as gatewayConfigSchema };

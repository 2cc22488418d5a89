import { badRequest } from '../shared/errors';
import { z } from '../shared/validation';

/**
 * Rate-limit policies: a `type` (model requests, their tokens, or MCP tool calls) counted per `unit`
 * (a fixed minute, hour or UTC day) up to `value`, applied to the requests whose
 * attributes match every condition, with one counter per distinct `group_by` tuple.
 */

export const POLICY_TYPES = ['requests', 'tokens', 'tool_calls'] as const;
export const POLICY_UNITS = ['rpm', 'rph', 'rpd'] as const;
export const POLICY_STATUSES = ['active', 'archived'] as const;

export type PolicyType = (typeof POLICY_TYPES)[number];
export type PolicyUnit = (typeof POLICY_UNITS)[number];
export type PolicyStatus = (typeof POLICY_STATUSES)[number];

/** Window length of each unit; windows are aligned to the Unix epoch (days to UTC midnight). */
export const UNIT_MS: Record<PolicyUnit, number> = { rpm: 60_000, rph: 3_600_000, rpd: 86_400_000 };

export const UNIT_WORDS: Record<PolicyUnit, string> = { rpm: 'minute', rph: 'hour', rpd: 'day' };

export interface PolicyCondition {
  key: string;
  value: string;
}

export interface PolicyGroupBy {
  key: string;
}

/** What every kind of policy (rate limits, budgets) has. */
export interface PolicyBase {
  id: string;
  name: string | null;
  status: PolicyStatus;
  conditions: PolicyCondition[];
  group_by: PolicyGroupBy[];
  workspace_id: string;
  organisation_id: string;
  /** ISO 8601 */
  created_at: string;
  /** ISO 8601 */
  last_updated_at: string;
}

/** A rate-limit policy as the list returns it. */
export interface RateLimitPolicy extends PolicyBase {
  type: PolicyType;
  unit: PolicyUnit;
  value: number;
  /**
   * Internal: the largest value the policy has had, which sizes its counters' shards. A
   * lowered value keeps the shards its window already counted on, so none is left unread.
   */
  shard_value?: number;
}

/** The single-policy read (and the write responses): the policy with its `object`. */
export type RateLimitPolicyObject = RateLimitPolicy & { object: 'policy_rate_limits' };

export const withObject = (policy: RateLimitPolicy): RateLimitPolicyObject => ({ object: 'policy_rate_limits', ...policy });

// ---- condition and group-by keys -------------------------------------------------------

/** Attributes of a request a policy can match on or group by. */
export const SUBJECT_KEYS = ['api_key', 'workspace_id', 'organisation_id', 'provider', 'model', 'mcp_server', 'mcp_tool'] as const;
export const METADATA_PREFIX = 'metadata.';
/** Metadata keys are at most 64 characters. */
export const MAX_METADATA_KEY_LENGTH = 64;
export const MAX_CONDITION_VALUE_LENGTH = 512;
export const MAX_CONDITIONS = 20;
export const MAX_GROUP_BY = 10;
/** Condition value that matches any present value of its key. */
export const WILDCARD = '*';

const ALLOWED_KEYS_TEXT = `${SUBJECT_KEYS.join(', ')}, ${METADATA_PREFIX}<key>`;

export function isAllowedKey(key: string): boolean {
  if ((SUBJECT_KEYS as readonly string[]).includes(key)) return true;
  if (!key.startsWith(METADATA_PREFIX)) return false;
  const name = key.slice(METADATA_PREFIX.length);
  return name.length > 0 && name.length <= MAX_METADATA_KEY_LENGTH;
}

/** 400 naming the first unknown key (e.g. `conditions[1].key`), or a repeated group-by key. */
export function checkKeys(conditions: readonly PolicyCondition[] | undefined, groupBy: readonly PolicyGroupBy[] | undefined): void {
  const check = (key: string, field: string) => {
    if (!isAllowedKey(key)) {
      throw badRequest(
        `Invalid \`${field}\`: unknown key '${key.slice(0, 80)}'; allowed keys: ${ALLOWED_KEYS_TEXT} (metadata keys of 1-${MAX_METADATA_KEY_LENGTH} characters).`,
        field,
        'invalid_value',
      );
    }
  };
  conditions?.forEach((c, i) => check(c.key, `conditions[${i}].key`));
  const seen = new Set<string>();
  groupBy?.forEach((g, i) => {
    check(g.key, `group_by[${i}].key`);
    if (seen.has(g.key)) throw badRequest(`Invalid \`group_by[${i}].key\`: '${g.key}' is listed twice.`, `group_by[${i}].key`, 'invalid_value');
    seen.add(g.key);
  });
}

// ---- request bodies ----------------------------------------------------------------------

const key = z.string().check(z.minLength(1), z.maxLength(METADATA_PREFIX.length + MAX_METADATA_KEY_LENGTH));
const condition = z.strictObject({ key, value: z.string().check(z.minLength(1), z.maxLength(MAX_CONDITION_VALUE_LENGTH)) });
const groupBy = z.strictObject({ key });

/** The fields every kind of policy takes in its bodies (keys checked by `checkKeys`). */
export const commonFields = {
  name: z.optional(z.nullable(z.string().check(z.maxLength(256)))),
  conditions: z.optional(z.array(condition).check(z.maxLength(MAX_CONDITIONS))),
  group_by: z.optional(z.array(groupBy).check(z.maxLength(MAX_GROUP_BY))),
};

/** `workspace_id` of a create body: another workspace of the key's organisation. */
export const workspaceRef = z.optional(z.string().check(z.minLength(1), z.maxLength(128)));

const fields = {
  ...commonFields,
  /**
   * Requests, tokens or tool calls per window, at least 1. Counters
   * stay whole: a request is admitted while its count stays within the value, so a
   * requests policy of 2.5 admits 2 per window; a tokens policy admits while the tokens
   * used are below the value.
   */
  value: z.number().check(z.gte(1), z.lte(Number.MAX_SAFE_INTEGER)),
  type: z.enum(POLICY_TYPES),
  unit: z.enum(POLICY_UNITS),
};

export const createSchema = z.strictObject({
  ...fields,
  workspace_id: workspaceRef,
});

export const updateSchema = z.strictObject({
  name: fields.name,
  conditions: fields.conditions,
  group_by: fields.group_by,
  value: z.optional(fields.value),
  type: z.optional(fields.type),
  unit: z.optional(fields.unit),
  status: z.optional(z.enum(POLICY_STATUSES)),
});

export type CreatePolicyInput = z.infer<typeof createSchema>;
export type UpdatePolicyInput = z.infer<typeof updateSchema>;

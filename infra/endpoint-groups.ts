/**
 * Endpoint groups: one response-streaming Lambda each. `prefixes` are the
 * path prefixes under /v1 that a group owns; the `gateway` group owns everything else
 * (the generic proxy). The API stack and the local runtime both route from this list.
 */
export interface EndpointGroup {
  name: string;
  /** Handler module, relative to the repository root. */
  entry: string;
  /** Top-level resources under /v1 owned by this group (each with a `{proxy+}` child). */
  prefixes: readonly string[];
  /** Top-level resources outside /v1 owned by this group (each with a `{proxy+}` child): the console. */
  roots?: readonly string[];
}

export const ENDPOINT_GROUPS: readonly EndpointGroup[] = [
  {
    name: 'admin',
    entry: 'functions/admin/handler.ts',
    prefixes: ['api-keys', 'providers', 'configs', 'workspaces', 'logs', 'analytics', 'openapi.json'],
    roots: ['console'],
  },
  { name: 'prompts', entry: 'functions/prompts/handler.ts', prefixes: ['prompts'] },
  { name: 'assistants', entry: 'functions/assistants/handler.ts', prefixes: ['assistants', 'threads'] },
  { name: 'fine-tuning', entry: 'functions/fine-tuning/handler.ts', prefixes: ['fine_tuning'] },
  { name: 'files', entry: 'functions/files/handler.ts', prefixes: ['files', 'uploads'] },
  { name: 'batches', entry: 'functions/batches/handler.ts', prefixes: ['batches'] },
  { name: 'rerank', entry: 'functions/rerank/handler.ts', prefixes: ['rerank'] },
  { name: 'guardrails', entry: 'functions/guardrails/handler.ts', prefixes: ['guardrails'] },
  { name: 'mcp', entry: 'functions/mcp/handler.ts', prefixes: ['mcp-servers', 'mcp'] },
  { name: 'policies', entry: 'functions/policies/handler.ts', prefixes: ['policies', 'prices'] },
  { name: 'gateway', entry: 'functions/gateway/handler.ts', prefixes: [] },
];

export const FALLBACK_GROUP = 'gateway';

/** Which group serves a path (the first segment after /v1 decides, or a group's root outside /v1). */
export function groupForPath(path: string, groups: readonly EndpointGroup[] = ENDPOINT_GROUPS): string {
  const segments = path.split('/').filter(Boolean);
  if (segments[0] === 'v1' && segments[1]) {
    const owner = groups.find((g) => g.prefixes.includes(segments[1]!));
    if (owner) return owner.name;
  } else if (segments[0]) {
    const owner = groups.find((g) => g.roots?.includes(segments[0]!));
    if (owner) return owner.name;
  }
  return FALLBACK_GROUP;
}

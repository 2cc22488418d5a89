/**
 * Endpoint groups: one response-streaming Lambda each. `prefixes` are the
 * path prefixes under /v1 that a group owns; the `gateway` group owns everything else
 * (the generic proxy). The API stack and the local runtime both route from this list.
 */
export interface EndpointGroup {
  name: string;
  /** Handler module, relative to the repository root. */
  entry: string;
  /**
   * Resources under /v1 owned by this group (each with a `{proxy+}` child): a top-level one
   * (`batches`) or a nested one (`messages/batches`, whose parent stays the fallback group's).
   */
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
  { name: 'batches', entry: 'functions/batches/handler.ts', prefixes: ['batches', 'messages/batches'] },
  { name: 'rerank', entry: 'functions/rerank/handler.ts', prefixes: ['rerank'] },
  { name: 'guardrails', entry: 'functions/guardrails/handler.ts', prefixes: ['guardrails'] },
  { name: 'mcp', entry: 'functions/mcp/handler.ts', prefixes: ['mcp-servers', 'mcp'] },
  { name: 'policies', entry: 'functions/policies/handler.ts', prefixes: ['policies', 'prices'] },
  { name: 'gateway', entry: 'functions/gateway/handler.ts', prefixes: [] },
];

export const FALLBACK_GROUP = 'gateway';

interface Routing {
  /** Owned prefix (`batches`, `messages/batches`) -> group. */
  byPrefix: Map<string, string>;
  /** Segments in the longest prefix. */
  deepest: number;
  /** Root outside /v1 -> group. */
  byRoot: Map<string, string>;
}

const routings = new WeakMap<readonly EndpointGroup[], Routing>();

/** The prefix tables of a group list, built once: routing runs on every request. */
function routingOf(groups: readonly EndpointGroup[]): Routing {
  let routing = routings.get(groups);
  if (!routing) {
    routing = { byPrefix: new Map(), deepest: 0, byRoot: new Map() };
    for (const group of groups) {
      for (const prefix of group.prefixes) {
        routing.byPrefix.set(prefix, group.name);
        routing.deepest = Math.max(routing.deepest, prefix.split('/').length);
      }
      for (const root of group.roots ?? []) routing.byRoot.set(root, group.name);
    }
    routings.set(groups, routing);
  }
  return routing;
}

/** Which group serves a path (the longest owned prefix after /v1 decides, or a group's root outside /v1). */
export function groupForPath(path: string, groups: readonly EndpointGroup[] = ENDPOINT_GROUPS): string {
  const routing = routingOf(groups);
  const segments = path.split('/').filter(Boolean);
  if (segments[0] === 'v1' && segments[1]) {
    for (let depth = Math.min(routing.deepest, segments.length - 1); depth >= 1; depth--) {
      const owner = routing.byPrefix.get(depth === 1 ? segments[1] : segments.slice(1, 1 + depth).join('/'));
      if (owner) return owner;
    }
  } else if (segments[0]) {
    const owner = routing.byRoot.get(segments[0]);
    if (owner) return owner;
  }
  return FALLBACK_GROUP;
}

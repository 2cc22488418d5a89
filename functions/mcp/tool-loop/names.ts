import type { McpToolSpec } from './spec';

/** The longest function name the chat APIs take (OpenAI, Anthropic, Gemini). */
const MAX_FUNCTION_NAME = 64;

const sanitize = (name: string) => name.replace(/[^A-Za-z0-9_-]/g, '_');

/**
 * The function names under which MCP tools are offered to the model: `<server_label>__<tool>`,
 * made unique against the caller's own function tools and each other, and mapped back.
 */
export class McpToolNames {
  readonly #byName = new Map<string, { spec: McpToolSpec; tool: string }>();
  readonly #taken: Set<string>;

  constructor(callerFunctions: Iterable<string>) {
    this.#taken = new Set(callerFunctions);
  }

  offer(spec: McpToolSpec, tool: string): string {
    const base = McpToolNames.historyName(spec.label, tool);
    let name = base;
    for (let n = 2; this.#taken.has(name); n++) name = `${base.slice(0, MAX_FUNCTION_NAME - String(n).length - 1)}_${n}`;
    this.#taken.add(name);
    this.#byName.set(name, { spec, tool });
    return name;
  }

  lookup(name: string): { spec: McpToolSpec; tool: string } | undefined {
    return this.#byName.get(name);
  }

  /** The name an earlier call is replayed under (its tool may not be offered any more). */
  nameOf(label: string, tool: string): string {
    for (const [name, offered] of this.#byName) if (offered.spec.label === label && offered.tool === tool) return name;
    return McpToolNames.historyName(label, tool);
  }

  static historyName(label: string, tool: string): string {
    return sanitize(`${label}__${tool}`).slice(0, MAX_FUNCTION_NAME);
  }
}

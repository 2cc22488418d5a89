/**
 * What a guardrail looks at: the text of the request (kind `input`) or of the answer
 * (kind `output`), its JSON form when there is one, and facts about the request.
 * Lives apart from evaluate.ts so the check modules can import it without a cycle;
 * evaluate.ts re-exports it.
 */
export interface GuardrailInput {
  kind: 'input' | 'output';
  text: string;
  json?: unknown;
  request: {
    /** Request type (`chat`, `embeddings`, `proxy`, ...) or the request path (`/v1/chat/completions`). */
    route: string;
    model?: string;
    metadata: Record<string, string>;
    /** Request headers, names lower-cased. */
    headers: Record<string, string>;
  };
}

export type OnFail = 'block' | 'log' | 'warn';

export interface GuardrailActions {
  onFail: OnFail;
  message?: string;
  deny?: boolean;
}

/** One check of a guardrail as the caller wrote it (and as it is stored). */
export interface CheckSpec {
  id: string;
  parameters: Record<string, unknown>;
}

/** The definition a guardrail version holds. */
export interface GuardrailDefinition {
  checks: CheckSpec[];
  actions: GuardrailActions;
}

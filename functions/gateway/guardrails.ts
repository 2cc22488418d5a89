import type { HookResult } from '../guardrails/evaluate';
import type { CallerRequest } from '../shared/http/types';
import { loadOnce } from '../shared/load-once';
import type { ChatCompletion, ChatRequest } from '../providers/types';
import { textOf } from '../providers/_shared/openai-shape';
import type { Leaf } from './routing';
import type { RequestFacts } from '../spend/request-record';

/**
 * The evaluator (its checks, the JSON-Schema validator, JOSE) is loaded by the first
 * request that has guardrails, not at cold start: most requests have none.
 */
const loadEvaluator = /* @__PURE__ */ loadOnce(() => import('../guardrails/evaluate'));

/**
 * Guardrails of a config (input_guardrails / output_guardrails) applied to chat. Input
 * checks run before the provider is called (a block means it is never called); output
 * checks run on the finished answer, streamed or not. A failing non-blocking guardrail
 * turns the status into 246; every result is reported as `hook_results`.
 */
export class ChatGuardrails {
  readonly before: HookResult[] = [];
  readonly after: HookResult[] = [];
  warned = false;
  private readonly inputDone = new Map<string, ChatRequest>();

  constructor(
    private readonly req: CallerRequest,
    private readonly facts: RequestFacts,
  ) {}

  get ran(): boolean {
    return this.before.length + this.after.length > 0;
  }

  /** Check the request for one routed target; returns the body to send (PII may be redacted). */
  async checkInput(leaf: Leaf, body: ChatRequest): Promise<ChatRequest> {
    const refs = leaf.node.input_guardrails;
    if (!refs?.length) return body;
    const memo = JSON.stringify(refs);
    const done = this.inputDone.get(memo);
    if (done) return done; // retries and fallbacks with the same guardrails are checked once
    const last = body.messages.at(-1);
    const { evaluateGuardrails, guardrailError } = await loadEvaluator();
    const outcome = await evaluateGuardrails(
      refs,
      this.req.auth.workspaceId,
      {
        kind: 'input',
        text: textOf(last?.content),
        json: body,
        request: this.requestInfo(body.model),
      },
      { param: 'input_guardrails' },
    );
    this.before.push(...outcome.hook_results);
    this.record();
    if (outcome.verdict === 'block') {
      this.facts.guardrailBlocked = true;
      throw guardrailError({ ...outcome, hook_results: this.before });
    }
    if (outcome.verdict === 'warn') this.warned = true;
    let checked = body;
    if (outcome.transformedText !== undefined && last && typeof last.content === 'string') {
      checked = { ...body, messages: [...body.messages.slice(0, -1), { ...last, content: outcome.transformedText } as typeof last] };
    }
    this.inputDone.set(memo, checked);
    return checked;
  }

  /** Check the answer's text; throws 446 when a deny guardrail fails. */
  async checkOutput(leaf: Leaf, text: string, model: string): Promise<'pass' | 'warn'> {
    const refs = leaf.node.output_guardrails;
    if (!refs?.length) return 'pass';
    const { evaluateGuardrails, guardrailError } = await loadEvaluator();
    const outcome = await evaluateGuardrails(
      refs,
      this.req.auth.workspaceId,
      {
        kind: 'output',
        text,
        request: this.requestInfo(model),
      },
      { param: 'output_guardrails' },
    );
    this.after.push(...outcome.hook_results);
    this.record();
    if (outcome.verdict === 'block') {
      this.facts.guardrailBlocked = true;
      throw guardrailError({ ...outcome, hook_results: [...this.before, ...this.after] });
    }
    if (outcome.verdict === 'warn') this.warned = true;
    return outcome.verdict === 'warn' ? 'warn' : 'pass';
  }

  hookResults() {
    return { before_request_hooks: this.before, after_request_hooks: this.after };
  }

  /** 246 when a non-blocking guardrail failed, else 200. */
  status(): number {
    return this.warned ? 246 : 200;
  }

  private requestInfo(model: string | undefined) {
    return { route: 'chat', model, metadata: this.facts.metadata, headers: this.req.headers };
  }

  private record(): void {
    this.facts.extra = { ...this.facts.extra, hook_results: this.hookResults() };
  }
}

export const completionText = (c: ChatCompletion): string =>
  c.choices.map((choice) => choice.message.content ?? choice.message.tool_calls?.map((t) => t.function.arguments).join('\n') ?? '').join('\n');

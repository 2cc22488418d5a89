import Mustache from 'mustache';

/**
 * Mustache rendering for prompt templates, on the token tree of `Mustache.parse` with our
 * own evaluator (the global `Mustache.escape` and template cache are never touched):
 *
 * - Values are inserted verbatim: no HTML escaping (`{{x}}` and `{{{x}}}` are the same).
 *   Strings as they are; numbers and booleans as text; null renders nothing; objects and
 *   arrays as JSON. Output is never parsed again, so a value holding `{{tags}}`, quotes,
 *   braces or newlines stays literal.
 * - Names resolve through Mustache's context stack (the section's value, then enclosing
 *   ones, then the variables), own properties only: nothing on a prototype is reachable,
 *   and no value is ever called (variables are JSON, there are no lambdas). Dotted names
 *   follow the Mustache spec: the first part is resolved on the stack, the rest within it.
 * - Sections render for truthy values (once per item of a non-empty list, with the value
 *   pushed on the stack); inverted sections for falsy values and empty lists (JavaScript
 *   truthiness, as mustache.js). Partials render nothing; comments and delimiter changes
 *   work as Mustache specifies.
 *
 * Required variables (the rule a missing-variables 400 follows): every name the template
 * evaluates outside an inverted section — interpolations and section keys — must resolve;
 * a key present with a null or false value counts as given. Names evaluated inside an
 * inverted section (its key and everything in its body) are optional, since the inverted
 * section is the template's own handling of absence. The body of a section that does not
 * render is not evaluated, so names used only there are not required for that call.
 */

export type Variables = Record<string, unknown>;

type Token = [type: string, value: string, start: number, end: number, children?: Token[], closeAt?: number];

const DEFAULT_TAGS: [string, string] = ['{{', '}}'];

/** Parse with a fresh Writer, so templates never accumulate in mustache's module-level cache. */
export function parseTemplate(template: string): Token[] {
  return new Mustache.Writer().parse(template, DEFAULT_TAGS) as Token[];
}

/** Mustache's syntax error for a template, or undefined when it parses. */
export function templateSyntaxError(template: string): string | undefined {
  try {
    parseTemplate(template);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

interface Scope {
  view: unknown;
  parent?: Scope;
}

type Lookup = { found: true; value: unknown } | { found: false };

const MISS: Lookup = { found: false };

function own(container: unknown, key: string): Lookup {
  if (container === null || container === undefined) return MISS;
  if (typeof container === 'object') {
    return Object.hasOwn(container, key) ? { found: true, value: (container as Record<string, unknown>)[key] } : MISS;
  }
  // Primitives: own properties only (a string's `length` and indices), as mustache.js allows.
  if (typeof container === 'string' && Object.hasOwn(Object(container), key)) {
    return { found: true, value: (container as unknown as Record<string, unknown>)[key] };
  }
  return MISS;
}

function lookup(name: string, scope: Scope): Lookup {
  if (name === '.') return { found: true, value: scope.view };
  const [head, ...rest] = name.split('.');
  let hit: Lookup = MISS;
  for (let s: Scope | undefined = scope; s && !hit.found; s = s.parent) hit = own(s.view, head!);
  if (!hit.found) return MISS;
  let value = hit.value;
  for (const part of rest) {
    const next = own(value, part);
    if (!next.found) return MISS;
    value = next.value;
  }
  return { found: true, value };
}

/** How a value is written into the prompt text. */
export function valueText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  return JSON.stringify(value) ?? '';
}

const isFalsy = (value: unknown) => !value || (Array.isArray(value) && value.length === 0);

interface RenderState {
  /** Depth of inverted sections around the current token (names there are optional). */
  inverted: number;
  missing: Set<string>;
}

function evaluate(name: string, scope: Scope, state: RenderState): unknown {
  const hit = lookup(name, scope);
  if (hit.found) return hit.value;
  if (state.inverted === 0) state.missing.add(name);
  return undefined;
}

function renderTokens(tokens: readonly Token[], scope: Scope, state: RenderState): string {
  let out = '';
  for (const token of tokens) {
    const [type, value] = token;
    switch (type) {
      case 'text':
        out += value;
        break;
      case 'name':
      case '&':
        out += valueText(evaluate(value, scope, state));
        break;
      case '#': {
        const v = evaluate(value, scope, state);
        if (isFalsy(v)) break;
        const children = token[4] ?? [];
        if (Array.isArray(v)) for (const item of v) out += renderTokens(children, { view: item, parent: scope }, state);
        else if (v === true) out += renderTokens(children, scope, state);
        else out += renderTokens(children, { view: v, parent: scope }, state);
        break;
      }
      case '^': {
        state.inverted++;
        const v = evaluate(value, scope, state);
        if (isFalsy(v)) out += renderTokens(token[4] ?? [], scope, state);
        state.inverted--;
        break;
      }
      default:
        // '>' partials (none are defined), '!' comments, '=' delimiter changes: no output.
        break;
    }
  }
  return out;
}

export interface RenderResult {
  text: string;
  /** Required names that did not resolve, as written in the template (e.g. `user.name`). */
  missing: string[];
}

/** Render one template string; never throws for missing names (they are reported). */
export function renderString(template: string, variables: Variables): RenderResult {
  const state: RenderState = { inverted: 0, missing: new Set() };
  const text = renderTokens(parseTemplate(template), { view: variables }, state);
  return { text, missing: [...state.missing] };
}

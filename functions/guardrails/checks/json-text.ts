import type { GuardrailInput } from '../types';

/**
 * The JSON a check looks at: `input.json` when the caller gave it, else the text parsed as
 * JSON, else the first fenced ```json block, else the outermost `{...}` / `[...]` span.
 * `undefined` when there is none.
 */
export function jsonOf(input: GuardrailInput): unknown {
  if (input.json !== undefined) return input.json;
  const text = input.text.trim();
  const whole = tryParse(text);
  if (whole !== undefined) return whole;
  const fenced = /```(?:json)?[^\n]*\n([\s\S]*?)```/i.exec(text);
  if (fenced) {
    const inner = tryParse(fenced[1]!.trim());
    if (inner !== undefined) return inner;
  }
  for (const [open, close] of [
    ['{', '}'],
    ['[', ']'],
  ] as const) {
    const start = text.indexOf(open);
    const end = text.lastIndexOf(close);
    if (start !== -1 && end > start) {
      const span = tryParse(text.slice(start, end + 1));
      if (span !== undefined) return span;
    }
  }
  return undefined;
}

function tryParse(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** SSE framing shared by the fakes. */

export const SSE_CONTENT_TYPE = 'text/event-stream; charset=utf-8';

/** `data: <json>` + separator (`\n\n`, or `\r\n\r\n` for Gemini). */
export function sseData(payload: unknown, sep = '\n\n'): string {
  return `data: ${typeof payload === 'string' ? payload : JSON.stringify(payload)}${sep}`;
}

/** `event: <name>\ndata: <json>\n\n`. */
export function sseEvent(event: string, payload: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(payload)}\n\n`;
}

/** OpenAI's terminal event. */
export const SSE_DONE = 'data: [DONE]\n\n';

/**
 * SSE framing for the Responses and Messages streams. Both APIs name each event on an
 * `event:` line and repeat the type inside the JSON; the Anthropic SDK skips frames that
 * have no `event:` line, so the line is not optional.
 */
export function sseFrame(event: { type: string }): string {
  return `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/** A failure to report inside a stream that has already started (a GatewayError fits). */
export interface StreamFailure {
  message: string;
  status?: number;
  type?: string;
  code?: string | null;
  param?: string | null;
}

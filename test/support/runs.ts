/** Helpers of the run crash and recovery tests: raw HTTP against a gateway, no SDK retries. */

export interface GatewayAt {
  url: string;
  adminKey: string;
}

export async function api<T = any>(
  gw: GatewayAt,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: T }> {
  const res = await fetch(`${gw.url}${path}`, {
    method,
    headers: { 'x-gateway-api-key': gw.adminKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

/**
 * Start a streamed run (`stream: true`) and read its events until the run is in progress
 * (its model call has started). Returns the run id and the response reader, which the test
 * may leave open (the process is about to be killed) or cancel.
 */
export async function streamedRunInProgress(
  gw: GatewayAt,
  threadId: string,
  assistantId: string,
): Promise<{ runId: string; reader: ReadableStreamDefaultReader<Uint8Array> }> {
  const res = await fetch(`${gw.url}/v1/threads/${threadId}/runs`, {
    method: 'POST',
    headers: { 'x-gateway-api-key': gw.adminKey, 'content-type': 'application/json' },
    body: JSON.stringify({ assistant_id: assistantId, stream: true }),
  });
  if (res.status !== 200 || !res.body) throw new Error(`streamed run: ${res.status} ${await res.text()}`);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the stream ended before the run was in progress:\n${text}`);
    text += decoder.decode(value, { stream: true });
    const started = /event: thread\.run\.in_progress\ndata: (\{.*\})/.exec(text);
    if (started) return { runId: (JSON.parse(started[1]!) as { id: string }).id, reader };
  }
}

const TERMINAL = new Set(['cancelled', 'failed', 'completed', 'incomplete', 'expired']);
export const isTerminalStatus = (status: string) => TERMINAL.has(status);

/** Poll a run until it is terminal or `timeoutMs` passes; the run as last read. */
export async function runWhenTerminal(gw: GatewayAt, threadId: string, runId: string, timeoutMs: number): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = await api(gw, 'GET', `/v1/threads/${threadId}/runs/${runId}`);
    if (run.status !== 200) throw new Error(`GET run ${runId}: ${run.status} ${JSON.stringify(run.body)}`);
    if (isTerminalStatus(run.body.status) || Date.now() > deadline) return run.body;
    await new Promise((r) => setTimeout(r, 200));
  }
}

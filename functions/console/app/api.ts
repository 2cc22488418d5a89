/**
 * The console's only way to the gateway: every call goes to the documented API (`/v1/...`)
 * as the signed-in console session (its `gw_console` cookie, sent by the browser), and a
 * write carries the session's CSRF token in `x-csrf-token`.
 */

/** API objects as the console shows them: JSON whose shape each page reads field by field. */
export type Row = Record<string, any>;

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: string | null = null,
    readonly code: string | null = null,
    readonly param: string | null = null,
  ) {
    super(message);
  }
}

export interface Session {
  role: string | null;
  workspace_id: string | null;
  subject: string | null;
  expires_at: number | null;
}

/** `/console` and the path it sits under (an API Gateway stage such as `/prod`). */
const consolePath = () => {
  const path = location.pathname;
  const at = path.indexOf('/console');
  return at < 0 ? '/console' : path.slice(0, at + '/console'.length);
};
export const apiRoot = () => `${consolePath().slice(0, -'/console'.length)}/v1`;
const sessionUrl = () => `${consolePath()}/session`;

let csrfToken: string | null = null;
let onSignedOut: (() => void) | null = null;

export const whenSignedOut = (listener: () => void) => {
  onSignedOut = listener;
};

const csrfHeader = (method: string): Record<string, string> => (method !== 'GET' && csrfToken ? { 'x-csrf-token': csrfToken } : {});

async function errorOf(res: Response): Promise<ApiError> {
  const text = await res.text();
  try {
    const { error } = JSON.parse(text) as { error: { message: string; type: string; code: string | null; param: string | null } };
    return new ApiError(res.status, error.message, error.type, error.code, error.param);
  } catch {
    return new ApiError(res.status, text || res.statusText);
  }
}

/** One call to the documented API; `path` starts after `/v1`. An expired session ends the sign-in. */
export async function request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
  const res = await fetch(apiRoot() + path, {
    method,
    credentials: 'same-origin',
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...csrfHeader(method), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (res.status === 401) {
    csrfToken = null;
    onSignedOut?.();
  }
  if (!res.ok) throw await errorOf(res);
  return res;
}

export async function api<T = Row>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<T> {
  const res = await request(method, path, body, headers);
  const text = await res.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

/** A streamed chat completion: calls `onText` with each delta's text as it arrives. */
export async function streamCompletion(path: string, body: unknown, headers: Record<string, string>, onText: (text: string) => void): Promise<void> {
  const res = await request('POST', path, body, headers);
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let end = buffer.indexOf('\n\n');
    while (end >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf('\n\n');
      const data = event
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trim())
        .join('');
      if (!data || data === '[DONE]') continue;
      const chunk = JSON.parse(data) as { choices?: Array<{ delta?: { content?: string } }>; error?: { message: string } };
      if (chunk.error) throw new ApiError(502, chunk.error.message);
      const text = chunk.choices?.[0]?.delta?.content;
      if (text) onText(text);
    }
  }
}

interface SessionAnswer {
  csrf_token: string;
  role: string;
  workspace_id: string;
  expires_at: number;
  subject: string;
}

const fromAnswer = (answer: SessionAnswer): Session => {
  csrfToken = answer.csrf_token;
  return { role: answer.role, workspace_id: answer.workspace_id, subject: answer.subject, expires_at: answer.expires_at };
};

/** The current console session, if its cookie is valid. */
export async function currentSession(): Promise<Session | null> {
  const res = await fetch(sessionUrl(), { credentials: 'same-origin' }).catch(() => null);
  return res?.ok ? fromAnswer((await res.json()) as SessionAnswer) : null;
}

/** Trades a pasted key for a console session (the key itself is not kept). */
export async function signInWithKey(apiKey: string): Promise<Session> {
  const res = await fetch(sessionUrl(), {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ api_key: apiKey }),
  });
  if (!res.ok) throw await errorOf(res);
  return fromAnswer((await res.json()) as SessionAnswer);
}

export async function signOut(): Promise<void> {
  const csrf = csrfToken;
  csrfToken = null;
  await fetch(sessionUrl(), { method: 'DELETE', credentials: 'same-origin', headers: csrf ? { 'x-csrf-token': csrf } : {} }).catch(() => undefined);
}

export interface SsoConfig {
  enabled: boolean;
  issuer?: string;
  label?: string;
}

export async function ssoConfig(): Promise<SsoConfig> {
  const res = await fetch(`${consolePath()}/sso/config`, { credentials: 'same-origin' }).catch(() => null);
  if (!res?.ok) return { enabled: false };
  return (await res.json().catch(() => ({ enabled: false }))) as SsoConfig;
}

export const ssoLoginUrl = () => `${consolePath()}/sso/login`;

import { isInitializeRequest, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import type { GatewayRequest, HttpResponse } from '../shared/http/types';
import { createSession, deleteSession, findSession, newSessionId, type McpSession } from './sessions';

/**
 * The session check in front of the SDK's (stateless, per-request) transport: what the
 * SDK's stateful mode does in memory, done against the sessions table so that any container
 * serves any request of a session (docs/mcp.md, "Sessions").
 *
 * - `initialize` (POST) opens a session once the SDK has answered it: the answer gets an
 *   `Mcp-Session-Id`.
 * - A request with `Mcp-Session-Id` must name a live session of its key on this endpoint
 *   (404 otherwise, so the client initializes again), and its `MCP-Protocol-Version`, if
 *   sent, must be the one negotiated (400 otherwise).
 * - A POST without one is served without a session (clients that never keep one work as
 *   before); GET and DELETE need one (400).
 */

export type Gate =
  | { kind: 'initialize'; clientInfo: McpSession['client_info'] }
  | { kind: 'stateless' }
  | { kind: 'session'; session: McpSession }
  | { kind: 'refused'; response: HttpResponse };

const SESSION_HEADER = 'mcp-session-id';
const MAX_CLIENT_INFO_CHARS = 200;

export function jsonRpcErrorResponse(statusCode: number, code: number, message: string, headers: Record<string, string> = {}): HttpResponse {
  return {
    statusCode,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }),
  };
}

function initializeIn(body: Buffer): McpSession['client_info'] | undefined {
  let message: unknown;
  try {
    message = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined; // the SDK answers the parse error
  }
  const messages = Array.isArray(message) ? message : [message];
  const initialize = messages.find((m) => isInitializeRequest(m)) as { params: { clientInfo: { name?: unknown; version?: unknown } } } | undefined;
  if (!initialize) return undefined;
  const text = (value: unknown) => (typeof value === 'string' ? value.slice(0, MAX_CLIENT_INFO_CHARS) : undefined);
  return { name: text(initialize.params.clientInfo.name), version: text(initialize.params.clientInfo.version) };
}

export async function gate(req: GatewayRequest, endpoint: string): Promise<Gate> {
  if (req.method === 'POST') {
    const clientInfo = initializeIn(req.body);
    if (clientInfo) return { kind: 'initialize', clientInfo };
  }
  const id = req.headers[SESSION_HEADER];
  if (id === undefined || id === '') {
    if (req.method === 'POST') return { kind: 'stateless' };
    return { kind: 'refused', response: jsonRpcErrorResponse(400, -32000, 'Bad Request: Mcp-Session-Id header is required (initialize first).') };
  }
  const session = id.length <= 64 ? await findSession(req.auth.workspaceId, req.auth.keyId, endpoint, id) : undefined;
  if (!session) {
    return { kind: 'refused', response: jsonRpcErrorResponse(404, -32001, 'Session not found: it expired or was ended; initialize a new one.') };
  }
  const version = req.headers['mcp-protocol-version'];
  if (version !== undefined && version !== session.protocol_version) {
    const supported = SUPPORTED_PROTOCOL_VERSIONS.includes(version);
    const why = supported ? `this session negotiated ${session.protocol_version}` : `supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}`;
    return { kind: 'refused', response: jsonRpcErrorResponse(400, -32000, `Bad Request: Unsupported protocol version: ${version.slice(0, 32)} (${why}).`) };
  }
  return { kind: 'session', session };
}

/**
 * After the SDK answered `initialize` (JSON): store the session with the version it
 * negotiated and give its id to the client. An error answer opens nothing.
 */
export async function openSession(req: GatewayRequest, endpoint: string, clientInfo: McpSession['client_info'], answer: HttpResponse): Promise<HttpResponse> {
  if (answer.statusCode !== 200 || !Buffer.isBuffer(answer.body)) return answer;
  let protocolVersion: unknown;
  try {
    const parsed = JSON.parse(answer.body.toString('utf8')) as { result?: { protocolVersion?: unknown } } | { result?: { protocolVersion?: unknown } }[];
    protocolVersion = (Array.isArray(parsed) ? parsed.find((m) => m.result) : parsed)?.result?.protocolVersion;
  } catch {
    return answer;
  }
  if (typeof protocolVersion !== 'string') return answer;
  const session = await createSession({
    id: newSessionId(),
    workspace_id: req.auth.workspaceId,
    key_id: req.auth.keyId,
    endpoint,
    protocol_version: protocolVersion,
    client_info: clientInfo,
  });
  return { ...answer, headers: { ...answer.headers, [SESSION_HEADER]: session.id } };
}

/** DELETE: end the session; the spec leaves the success status open, the SDK's own server answers 200 with no body. */
export async function endSession(session: McpSession): Promise<HttpResponse> {
  await deleteSession(session.workspace_id, session.id);
  return { statusCode: 200 };
}

import { createHttpHandler } from '../shared/http/lambda-entry';
import type { GatewayRequest, HttpResponse, Route } from '../shared/http/types';
import { chatCompletions } from './chat';
import { embeddings } from './embeddings';
import { proxyRoutes } from './proxy';
import { logged } from './request-log';
import { idempotency } from '../shared/http/idempotency';
import type { GatewayError } from '../shared/errors';
import { googleErrorResponse } from '../formats/gemini/errors';
import { loadOnce } from '../shared/load-once';

const googleKernelError = (err: GatewayError) => googleErrorResponse(err);

// Rare routes load on first use, so the cold start stays within its budget (test/infra/bundles.test.ts),
// each module once (loadOnce), not an `import()` per request.
type Module = Record<string, (req: GatewayRequest) => Promise<HttpResponse>>;
const lazy = (load: () => Promise<Module>, name: string) => (req: GatewayRequest) => load().then((m) => m[name]!(req));
const audio = /* @__PURE__ */ loadOnce(() => import('./audio') as Promise<Module>);
// The route module also exports helpers the MCP tool loop shares; only its handlers are looked up here.
const responsesApi = /* @__PURE__ */ loadOnce(() => import('./openai-responses/route') as unknown as Promise<Module>);
/** `POST /v1/responses` goes through the MCP tool loop's door: requests with `mcp` tools the gateway runs stay there. */
const responsesCreate = /* @__PURE__ */ loadOnce(() => import('../mcp/tool-loop/route') as Promise<Module>);
/** `POST /v1/messages` likewise, for `mcp_servers` the gateway runs. */
const messagesCreate = /* @__PURE__ */ loadOnce(() => import('../mcp/tool-loop/messages-route') as Promise<Module>);
/** Chat completions with `x-gateway-mcp-servers`: the tools of those stored MCP servers run server-side. */
const chatWithMcp = lazy(
  /* @__PURE__ */ loadOnce(() => import('../mcp/tool-loop/chat-run') as Promise<Module>),
  'chatWithMcp',
);
const models = /* @__PURE__ */ loadOnce(() => import('./models') as Promise<Module>);
const messagesApi = /* @__PURE__ */ loadOnce(() => import('./messages') as unknown as Promise<Module>);
const geminiApi = /* @__PURE__ */ loadOnce(() => import('./gemini') as Promise<Module>);

export const routes: Route[] = [
  {
    method: 'POST',
    path: '/v1/chat/completions',
    access: 'gateway',
    ...logged('chat.completions', idempotency),
    handler: (req) => (req.headers['x-gateway-mcp-servers'] ? chatWithMcp(req) : chatCompletions(req)),
  },
  { method: 'POST', path: '/v1/responses', access: 'gateway', ...logged('responses', idempotency), handler: lazy(responsesCreate, 'createResponse') },
  {
    method: 'POST',
    path: '/v1/responses/input_tokens',
    access: 'gateway',
    ...logged('responses.input_tokens'),
    handler: lazy(responsesApi, 'countInputTokens'),
  },
  { method: 'GET', path: '/v1/responses/{id}', access: 'gateway', name: 'responses.retrieve', handler: lazy(responsesApi, 'retrieveResponse') },
  { method: 'DELETE', path: '/v1/responses/{id}', access: 'gateway', name: 'responses.delete', handler: lazy(responsesApi, 'deleteStoredResponse') },
  { method: 'GET', path: '/v1/responses/{id}/input_items', access: 'gateway', name: 'responses.input_items', handler: lazy(responsesApi, 'listInputItems') },
  { method: 'POST', path: '/v1/messages', access: 'gateway', name: 'messages', handler: lazy(messagesCreate, 'messages') },
  { method: 'POST', path: '/v1/messages/count_tokens', access: 'gateway', name: 'messages.count_tokens', handler: lazy(messagesApi, 'countTokens') },
  // The Gemini API (v1beta, and v1 for a client set to it): `{model}:{action}` is one segment or more (a model id may hold '/').
  ...['/v1beta/models/{proxy+}', '/v1/models/{proxy+}'].map(
    (path): Route => ({
      method: 'POST',
      path,
      access: 'gateway',
      name: 'gemini',
      keyInQuery: 'key',
      errorResponse: googleKernelError,
      handler: lazy(geminiApi, 'geminiModels'),
    }),
  ),
  { method: 'GET', path: '/v1/models', access: 'gateway', ...logged('models'), handler: lazy(models, 'listModels') },
  { method: 'POST', path: '/v1/embeddings', access: 'gateway', ...logged('embeddings', idempotency), handler: embeddings },
  { method: 'POST', path: '/v1/audio/speech', access: 'gateway', ...logged('audio.speech'), handler: lazy(audio, 'speech') },
  {
    method: 'POST',
    path: '/v1/audio/transcriptions',
    access: 'gateway',
    ...logged('audio.transcriptions'),
    handler: lazy(audio, 'transcriptions'),
  },
  {
    method: 'POST',
    path: '/v1/audio/translations',
    access: 'gateway',
    ...logged('audio.translations'),
    handler: lazy(audio, 'translations'),
  },
  ...proxyRoutes,
];

export const handler = createHttpHandler(routes);

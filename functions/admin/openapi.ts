import type { HttpResponse, Route } from '../shared/http/types';

let document: string | undefined;

/**
 * `GET /v1/openapi.json`: the OpenAPI 3.1 document of every endpoint group, as committed in
 * docs/openapi.json (built from the routes' zod schemas by `npm run openapi`; a test keeps
 * the file current). Loaded on first use, so the admin group's cold start does not parse it.
 * Like every route it needs a gateway key (any scope): the kernel checks the key before
 * routing, so no path can be probed anonymously.
 */
async function openApiDocument(): Promise<HttpResponse> {
  document ??= JSON.stringify((await import('../../docs/openapi.json', { with: { type: 'json' } })).default);
  return { statusCode: 200, headers: { 'content-type': 'application/json' }, body: document };
}

export const openApiRoutes: Route[] = [{ method: 'GET', path: '/v1/openapi.json', access: 'member', name: 'openapi', handler: openApiDocument }];

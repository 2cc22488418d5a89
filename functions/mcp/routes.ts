import type { GatewayRequest, Route } from '../shared/http/types';
import { mcpServerRoutes } from './admin-routes';

/** The MCP SDK loads on the first `/v1/mcp` request, not with the `/v1/mcp-servers` routes. */
const endpoint = () => import('./endpoint');
const aggregate = async (req: GatewayRequest) => (await endpoint()).serveAggregate(req);
const one = async (req: GatewayRequest) => (await endpoint()).serveOne(req);

const protocolRoutes: Route[] = (['POST', 'GET', 'DELETE'] as const).flatMap((method): Route[] => [
  { method, path: '/v1/mcp', access: 'gateway', name: `${method} /v1/mcp`, handler: aggregate },
  { method, path: '/v1/mcp/{slug}', access: 'gateway', name: `${method} /v1/mcp/{slug}`, handler: one },
]);

export const mcpRoutes: Route[] = [...mcpServerRoutes, ...protocolRoutes];

import { proxyUnrouted } from '../gateway/proxy';
import { createHttpHandler } from '../shared/http/lambda-entry';
import { rerankRoutes } from './routes';

export const routes = rerankRoutes;
export const handler = createHttpHandler(routes, { passthrough: proxyUnrouted });

import { createHttpHandler } from '../shared/http/lambda-entry';
import { mcpRoutes } from './routes';

export const routes = mcpRoutes;
export const handler = createHttpHandler(routes);

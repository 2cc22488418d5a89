import { createHttpHandler } from '../shared/http/handler';
import { policyRoutes } from './routes';

export const routes = policyRoutes;
export const handler = createHttpHandler(routes);

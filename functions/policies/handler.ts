import { createHttpHandler } from '../shared/http/lambda-entry';
import { policyRoutes } from './routes';

export const routes = policyRoutes;
export const handler = createHttpHandler(routes);

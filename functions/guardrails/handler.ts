import { createHttpHandler } from '../shared/http/handler';
import { guardrailRoutes } from './routes';

export const routes = guardrailRoutes;
export const handler = createHttpHandler(routes);

import { createHttpHandler } from '../shared/http/lambda-entry';
import { guardrailRoutes } from './routes';

export const routes = guardrailRoutes;
export const handler = createHttpHandler(routes);

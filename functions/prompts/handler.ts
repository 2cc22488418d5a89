import { createHttpHandler } from '../shared/http/lambda-entry';
import { promptRoutes } from './routes';

export const routes = promptRoutes;
export const handler = createHttpHandler(routes);

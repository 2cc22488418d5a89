import { createHttpHandler } from '../shared/http/handler';
import { promptRoutes } from './routes';

export const routes = promptRoutes;
export const handler = createHttpHandler(routes);

import { createHttpHandler } from '../shared/http/lambda-entry';
import { priceRoutes } from '../spend/price-routes';
import { policyRoutes } from './routes';

export const routes = [...policyRoutes, ...priceRoutes];
export const handler = createHttpHandler(routes);

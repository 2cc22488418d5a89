import { createHttpHandler } from '../shared/http/handler';
import { policyRoutes } from './routes';

export const handler = createHttpHandler(policyRoutes);

import { createHttpHandler } from '../shared/http/handler';
import { guardrailRoutes } from './routes';

export const handler = createHttpHandler(guardrailRoutes);

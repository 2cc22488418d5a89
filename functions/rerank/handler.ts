import { createHttpHandler } from '../shared/http/handler';
import { rerankRoutes } from './routes';

export const handler = createHttpHandler(rerankRoutes);

import { createHttpHandler } from '../shared/http/handler';
import { promptRoutes } from './routes';

export const handler = createHttpHandler(promptRoutes);

import { createHttpHandler } from '../shared/http/handler';

/** Routes arrive with the issue that builds this endpoint group; until then every path is a 404. */
export const handler = createHttpHandler([]);

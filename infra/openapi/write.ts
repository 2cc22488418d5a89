/** `npm run openapi`: regenerate docs/openapi.json from the routes' schemas. */
import { writeFileSync } from 'node:fs';
import { renderOpenApiDocument } from './document';

writeFileSync(new URL('../../docs/openapi.json', import.meta.url), renderOpenApiDocument());

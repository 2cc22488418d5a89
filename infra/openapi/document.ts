/**
 * The OpenAPI 3.1 document of the whole API, built from OPERATIONS: request bodies are the
 * routes' own zod schemas as JSON Schema draft 2020-12 (OpenAPI 3.1's dialect), with the
 * input shape (`io: 'input'`: defaults optional). `npm run openapi` writes it to
 * docs/openapi.json, which `GET /v1/openapi.json` serves.
 */
import * as zm from 'zod/mini';
import packageJson from '../../package.json' with { type: 'json' };
import { gatewayConfigSchema } from '../../functions/shared/gateway-config';
import { groupForPath } from '../endpoint-groups';
import type { Answer, Operation, QueryParameter } from './operation-kit';
import { IDEMPOTENT_OPERATIONS, OPERATIONS } from './operations';

type Json = Record<string, unknown>;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** The OpenAPI path of a route: API Gateway's greedy `{proxy+}` becomes `{proxy}`. */
export const openApiPath = (routePath: string) => routePath.replace('{proxy+}', '{proxy}');

const COMMON_SCHEMAS: Record<string, Json> = {
  Error: {
    type: 'object',
    description: 'Every error, in the OpenAI shape.',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['message', 'type', 'param', 'code'],
        properties: {
          message: { type: 'string' },
          type: { type: 'string', examples: ['invalid_request_error', 'authentication_error', 'rate_limit_error', 'guardrail_error', 'api_error'] },
          param: { type: ['string', 'null'], description: 'The field at fault, as a JSON path.' },
          code: { type: ['string', 'null'] },
        },
      },
    },
  },
  List: {
    type: 'object',
    required: ['object', 'data', 'has_more'],
    properties: {
      object: { const: 'list' },
      data: { type: 'array', items: { type: 'object' } },
      first_id: { type: ['string', 'null'] },
      last_id: { type: ['string', 'null'] },
      has_more: { type: 'boolean' },
    },
  },
  Deleted: {
    type: 'object',
    required: ['id', 'deleted'],
    properties: { id: { type: 'string' }, object: { type: 'string' }, deleted: { const: true } },
  },
};

/** Request bodies as component schemas; shared sub-schemas (the recursive config) by reference. */
function bodySchemas(): Record<string, Json> {
  const registry = zm.registry<{ id: string }>();
  registry.add(gatewayConfigSchema, { id: 'GatewayConfig' });
  const seen = new Map<string, zm.ZodMiniType>([['GatewayConfig', gatewayConfigSchema]]);
  for (const o of OPERATIONS) {
    if (!o.body || !('schema' in o.body)) continue;
    const known = seen.get(o.body.name);
    if (known && known !== o.body.schema) throw new Error(`Two schemas are named ${o.body.name}`);
    if (!known) registry.add(o.body.schema, { id: o.body.name });
    seen.set(o.body.name, o.body.schema);
  }
  const { schemas } = zm.toJSONSchema(registry, {
    target: 'draft-2020-12',
    io: 'input',
    unrepresentable: 'any',
    uri: (id) => `#/components/schemas/${id}`,
  }) as { schemas: Record<string, Json> };
  // zod puts sub-schemas used by several bodies under `__shared`'s `$defs`; a `$ref` into
  // another component's `$defs` does not resolve in OpenAPI, so each becomes a component.
  const { __shared: shared, ...named } = schemas;
  const sharedDefs = Object.entries((shared?.$defs ?? {}) as Record<string, Json>).map(([name, schema]) => [`Shared_${name}`, schema] as const);
  const all = Object.fromEntries([...Object.entries(named), ...sharedDefs].map(([name, { $id: _id, $schema: _schema, ...schema }]) => [name, schema]));
  // `$id`/`$schema` would re-base the `$ref`s inside a component; the document's dialect is 2020-12.
  return JSON.parse(JSON.stringify(all).replaceAll('#/components/schemas/__shared#/$defs/', '#/components/schemas/Shared_')) as Record<string, Json>;
}

/** Error answers every operation can give, as shared components (`Error<status>`). */
const ERROR_RESPONSES: Record<string, string> = {
  '400': 'Invalid request: `error.param` names the field.',
  '401': 'Missing or unknown gateway key (`x-gateway-api-key`).',
  '403': "The key's role or scopes do not reach this route, or it names another workspace (`insufficient_role`).",
  '404': 'No such object in this workspace.',
  '429': 'A rate-limit policy refused the request (`retry-after`, `x-ratelimit-*`).',
  default: 'Any other error, in the same shape.',
};
const errorResponseName = (status: string) => (status === 'default' ? 'Error' : `Error${status}`);

function answer(kind: Answer): Json {
  const json = (schema: Json) => ({ 'application/json': { schema } });
  switch (kind) {
    case 'list':
      return { description: 'A page of objects.', content: json(ref('List')) };
    case 'deleted':
      return { description: 'Deleted.', content: json(ref('Deleted')) };
    case 'stream':
      return {
        description: 'JSON; with `stream: true`, server-sent events as they are produced.',
        content: { ...json({ type: 'object' }), 'text/event-stream': { schema: { type: 'string' } } },
      };
    case 'passthrough':
      return { description: "The provider's answer: status, headers and body unchanged.", content: { '*/*': { schema: {} } } };
    case 'object':
      return { description: 'The object.', content: json({ type: 'object' }) };
    case 'bytes':
      return { description: 'The stored bytes, streamed.', content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } };
  }
}

const queryParameter = (q: QueryParameter) => ({
  name: q.name,
  in: 'query',
  required: false,
  description: q.description,
  schema: { type: q.type, ...(q.enum ? { enum: q.enum } : {}) },
});

function operation(o: Operation): Json {
  const pathParams = [...openApiPath(o.path).matchAll(/\{([^}]+)\}/g)].map((m) => ({
    name: m[1],
    in: 'path',
    required: true,
    schema: { type: 'string' },
    ...(o.path.endsWith('{proxy+}') && m[1] === 'proxy' ? { description: 'The rest of the path, any number of segments.' } : {}),
  }));
  const idempotent = IDEMPOTENT_OPERATIONS.has(`${o.method} ${o.path}`) ? [{ $ref: '#/components/parameters/IdempotencyKey' }] : [];
  const parameters = [...pathParams, ...(o.query ?? []).map(queryParameter), ...idempotent];
  const responses: Json = { '200': answer(o.answer) };
  for (const status of Object.keys(ERROR_RESPONSES)) responses[status] = { $ref: `#/components/responses/${errorResponseName(status)}` };
  const requestBody = !o.body
    ? undefined
    : 'schema' in o.body
      ? { required: true, content: { 'application/json': { schema: ref(o.body.name) } } }
      : 'form' in o.body
        ? { required: true, content: { 'multipart/form-data': { schema: o.body.form } } }
        : { required: false, description: 'Passed to the provider unread.', content: { [o.body.passthrough]: { schema: {} } } };
  return {
    operationId: operationId(o),
    summary: o.summary,
    ...(o.description ? { description: o.description } : {}),
    tags: [groupForPath(o.path)],
    'x-gateway-access': o.access,
    ...(parameters.length ? { parameters } : {}),
    ...(requestBody ? { requestBody } : {}),
    responses,
  };
}

function operationId(o: Operation): string {
  const words = o.path
    .replace('/v1/', '')
    .split('/')
    .filter(Boolean)
    .map((s) => s.replace(/[{}+]/g, '').replace(/[^A-Za-z0-9]+(.)/g, (_, c: string) => c.toUpperCase()));
  return [o.method.toLowerCase(), ...words.map((w) => w[0]!.toUpperCase() + w.slice(1))].join('');
}

export function buildOpenApiDocument(): Json {
  const paths: Record<string, Json> = {};
  for (const o of OPERATIONS) {
    const item = (paths[openApiPath(o.path)] ??= {});
    const method = o.method.toLowerCase();
    if (item[method]) throw new Error(`Operation listed twice: ${o.method} ${o.path}`);
    item[method] = operation(o);
  }
  return {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info: {
      title: 'AI gateway',
      version: packageJson.version,
      description:
        'One OpenAI-compatible endpoint in front of every model provider. Request bodies are generated from the zod schemas the routes validate with. Gateway headers (`x-gateway-*`), errors, streaming and limits: docs/api.md.',
    },
    servers: [{ url: 'http://127.0.0.1:8787', description: 'npm start' }],
    security: [{ gatewayKey: [] }],
    tags: [...new Set(OPERATIONS.map((o) => groupForPath(o.path)))].map((name) => ({ name, description: `The ${name} endpoint group (one Lambda function).` })),
    paths,
    components: {
      securitySchemes: {
        gatewayKey: {
          type: 'apiKey',
          in: 'header',
          name: 'x-gateway-api-key',
          description:
            'A gateway key. `x-gateway-access` on each operation names what it needs: `gateway` (model traffic: the gateway scope and a role other than viewer), or the roles `member` (every role), `viewer` (viewer and the admins), `workspace-admin`, `org-admin`.',
        },
      },
      parameters: {
        IdempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description:
            'A retry with the same key and the same request within 24 hours gets the first answer (`x-gateway-idempotent-replay: true`) instead of running again; another request under the key: 422; while the first runs: 409 with `x-should-retry: true`. Scoped to the workspace and the gateway key (docs/api.md, Idempotent retries).',
          schema: { type: 'string', minLength: 1, maxLength: 255 },
        },
      },
      schemas: { ...COMMON_SCHEMAS, ...bodySchemas() },
      responses: Object.fromEntries(
        Object.entries(ERROR_RESPONSES).map(([status, description]) => [
          errorResponseName(status),
          { description, content: { 'application/json': { schema: ref('Error') } } },
        ]),
      ),
    },
  };
}

/** The document as committed in docs/openapi.json. */
export const renderOpenApiDocument = () => `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`;

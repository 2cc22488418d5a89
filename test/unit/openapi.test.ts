import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ENDPOINT_GROUPS } from '../../infra/endpoint-groups';
import { buildOpenApiDocument, openApiPath, renderOpenApiDocument } from '../../infra/openapi/document';
import type { Route } from '../../functions/shared/http/types';
import { idempotency } from '../../functions/shared/http/idempotency';

type Json = Record<string, any>;
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/**
 * Every route of every endpoint group, as its Lambda handler serves them, but the public
 * ones: the console's sign-in and pages (outside /v1, no key) are the browser's, documented
 * in docs/console-sso.md and docs/api.md, not operations of the API.
 */
async function routeTable(): Promise<Array<{ group: string; route: Route }>> {
  const all: Array<{ group: string; route: Route }> = [];
  for (const group of ENDPOINT_GROUPS) {
    const module = (await import(`../../${group.entry}`)) as { routes?: Route[] };
    if (!module.routes) throw new Error(`${group.entry} exports no \`routes\``);
    all.push(...module.routes.filter((route) => route.access !== 'public').map((route) => ({ group: group.name, route })));
  }
  return all;
}

function documentOperations(doc: Json) {
  return Object.entries(doc.paths as Json).flatMap(([path, item]) =>
    Object.entries(item as Json)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, operation]) => ({ key: `${method.toUpperCase()} ${path}`, operation: operation as Json })),
  );
}

describe('the OpenAPI document', () => {
  const doc = buildOpenApiDocument() as Json;

  it('lists exactly the routes of the endpoint groups, with their group and access', async () => {
    const routes = await routeTable();
    const operations = new Map(documentOperations(doc).map((o) => [o.key, o.operation]));
    const routeKeys = routes.map(({ route }) => `${route.method} ${openApiPath(route.path)}`);
    expect(new Set(routeKeys).size).toBe(routeKeys.length);
    expect([...operations.keys()].sort()).toEqual([...routeKeys].sort());
    for (const { group, route } of routes) {
      const operation = operations.get(`${route.method} ${openApiPath(route.path)}`)!;
      expect({ route: `${route.method} ${route.path}`, tags: operation.tags, access: operation['x-gateway-access'] }).toEqual({
        route: `${route.method} ${route.path}`,
        tags: [group],
        access: route.access,
      });
    }
  });

  it('declares Idempotency-Key on exactly the routes that run the idempotency middleware', async () => {
    // Messages and Gemini compose their middleware in the module they load on first use (after their error shaping).
    const composedInModule = new Set(['POST /v1/messages', 'POST /v1beta/models/{proxy+}', 'POST /v1/models/{proxy+}']);
    const operations = new Map(documentOperations(doc).map((o) => [o.key, o.operation]));
    for (const { route } of await routeTable()) {
      const key = `${route.method} ${route.path}`;
      const declared = ((operations.get(`${route.method} ${openApiPath(route.path)}`)!.parameters ?? []) as Json[]).some(
        (p) => p.$ref === '#/components/parameters/IdempotencyKey',
      );
      expect({ key, declared }).toEqual({ key, declared: (route.use?.includes(idempotency) ?? false) || composedInModule.has(key) });
    }
  });

  it('is the committed docs/openapi.json (run `npm run openapi` after changing a route or schema)', () => {
    expect(readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8')).toBe(renderOpenApiDocument());
  });

  it('is structurally valid OpenAPI 3.1', () => {
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    expect(doc.info).toMatchObject({ title: expect.any(String), version: expect.any(String) });
    expect(doc.paths).toBeTypeOf('object');
    const ids = new Set<string>();
    for (const { key, operation } of documentOperations(doc)) {
      expect(operation.operationId, key).toMatch(/^[A-Za-z0-9]+$/);
      expect(ids.has(operation.operationId), `duplicate operationId ${operation.operationId}`).toBe(false);
      ids.add(operation.operationId);
      expect(Object.keys(operation.responses ?? {}).length, key).toBeGreaterThan(0);
      // Each `{name}` of the path template is declared once as a required path parameter.
      const templated = [...key.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
      const declared = (operation.parameters ?? []).filter((p: Json) => p.in === 'path');
      expect(declared.map((p: Json) => p.name).sort(), key).toEqual(templated);
      expect(
        declared.every((p: Json) => p.required === true),
        key,
      ).toBe(true);
    }
    for (const name of Object.keys(doc.components.schemas)) expect(name).toMatch(/^[a-zA-Z0-9.\-_]+$/);
  });

  it('resolves every $ref inside the document', () => {
    const refs: string[] = [];
    const walk = (node: unknown) => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (node && typeof node === 'object') {
        for (const [k, v] of Object.entries(node)) {
          if (k === '$ref') refs.push(v as string);
          else walk(v);
        }
      }
    };
    walk(doc);
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) {
      expect(ref, 'only local references').toMatch(/^#\//);
      const target = ref
        .slice(2)
        .split('/')
        .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
        .reduce<any>((node, part) => node?.[part], doc);
      expect(target, ref).toBeTypeOf('object');
    }
  });

  it('documents the POST /v1/configs body from the gateway config schema', () => {
    const body = doc.paths['/v1/configs'].post.requestBody.content['application/json'].schema;
    const schema = doc.components.schemas[body.$ref.split('/').pop()];
    expect(schema.required).toEqual(['name']);
    expect(schema.properties.config.$ref).toBe('#/components/schemas/GatewayConfig');
    expect(doc.components.schemas.GatewayConfig.properties.strategy.properties.mode.enum).toEqual(['single', 'fallback', 'loadbalance', 'conditional']);
  });
});

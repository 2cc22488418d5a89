/**
 * The JSON Schema draft-07 meta-schema (json-schema.org/draft-07/schema, annotations such as
 * `default` and `title` left out), which `default.jsonSchema` checks a guardrail's schema
 * against when the guardrail is written. Extended with the 2019-09 / 2020-12 keywords the
 * validator applies (`$defs`, `prefixItems`, `dependentRequired`, `unevaluatedProperties`,
 * ...) and OpenAPI's `nullable`, so a malformed value of one of those is rejected too
 * instead of misbehaving at run time. Other keywords are free, as in the meta-schema.
 */
export const DRAFT_07_ID = 'http://json-schema.org/draft-07/schema';

const schema = { $ref: '#' };
const schemaMap = { type: 'object', additionalProperties: schema };

export const META_SCHEMA = {
  $id: `${DRAFT_07_ID}#`,
  definitions: {
    schemaArray: { type: 'array', minItems: 1, items: schema },
    nonNegativeInteger: { type: 'integer', minimum: 0 },
    simpleTypes: { enum: ['array', 'boolean', 'integer', 'null', 'number', 'object', 'string'] },
    stringArray: { type: 'array', items: { type: 'string' }, uniqueItems: true },
  },
  type: ['object', 'boolean'],
  properties: {
    $id: { type: 'string', format: 'uri-reference' },
    $schema: { type: 'string', format: 'uri' },
    $ref: { type: 'string', format: 'uri-reference' },
    $comment: { type: 'string' },
    title: { type: 'string' },
    description: { type: 'string' },
    readOnly: { type: 'boolean' },
    examples: { type: 'array' },
    multipleOf: { type: 'number', exclusiveMinimum: 0 },
    maximum: { type: 'number' },
    exclusiveMaximum: { type: 'number' },
    minimum: { type: 'number' },
    exclusiveMinimum: { type: 'number' },
    maxLength: { $ref: '#/definitions/nonNegativeInteger' },
    minLength: { $ref: '#/definitions/nonNegativeInteger' },
    pattern: { type: 'string', format: 'regex' },
    additionalItems: schema,
    items: { anyOf: [schema, { $ref: '#/definitions/schemaArray' }] },
    maxItems: { $ref: '#/definitions/nonNegativeInteger' },
    minItems: { $ref: '#/definitions/nonNegativeInteger' },
    uniqueItems: { type: 'boolean' },
    contains: schema,
    maxProperties: { $ref: '#/definitions/nonNegativeInteger' },
    minProperties: { $ref: '#/definitions/nonNegativeInteger' },
    required: { $ref: '#/definitions/stringArray' },
    additionalProperties: schema,
    definitions: schemaMap,
    properties: schemaMap,
    patternProperties: { ...schemaMap, propertyNames: { format: 'regex' } },
    dependencies: { type: 'object', additionalProperties: { anyOf: [schema, { $ref: '#/definitions/stringArray' }] } },
    propertyNames: schema,
    enum: { type: 'array', minItems: 1, uniqueItems: true },
    type: {
      anyOf: [{ $ref: '#/definitions/simpleTypes' }, { type: 'array', items: { $ref: '#/definitions/simpleTypes' }, minItems: 1, uniqueItems: true }],
    },
    format: { type: 'string' },
    contentMediaType: { type: 'string' },
    contentEncoding: { type: 'string' },
    if: schema,
    then: schema,
    else: schema,
    allOf: { $ref: '#/definitions/schemaArray' },
    anyOf: { $ref: '#/definitions/schemaArray' },
    oneOf: { $ref: '#/definitions/schemaArray' },
    not: schema,
    // 2019-09 / 2020-12
    $defs: schemaMap,
    $anchor: { type: 'string', pattern: '^[A-Za-z][-A-Za-z0-9.:_]*$' },
    $recursiveRef: { const: '#' },
    $recursiveAnchor: { type: 'boolean' },
    prefixItems: { $ref: '#/definitions/schemaArray' },
    unevaluatedItems: schema,
    unevaluatedProperties: schema,
    dependentSchemas: schemaMap,
    dependentRequired: { type: 'object', additionalProperties: { $ref: '#/definitions/stringArray' } },
    minContains: { $ref: '#/definitions/nonNegativeInteger' },
    maxContains: { $ref: '#/definitions/nonNegativeInteger' },
    // OpenAPI 3.0 (accepted by Ajv 8, which this check used before)
    nullable: { type: 'boolean' },
  },
};

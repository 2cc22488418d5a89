/**
 * Every operation of the API, for the OpenAPI document (infra/openapi/document.ts). Request
 * bodies are the zod schemas the routes validate with, imported from the features; a test
 * (test/unit/openapi.test.ts) holds this list to the endpoint groups' route tables.
 */
import * as zm from 'zod/mini';
import { responsesRequestSchema } from '../../functions/formats/responses/schema';
import { createSchema as apiKeyCreate, updateSchema as apiKeyUpdate } from '../../functions/admin/api-keys';
import { createSchema as configCreate, updateSchema as configUpdate } from '../../functions/admin/configs';
import { createSchema as providerCreate, updateSchema as providerUpdate } from '../../functions/admin/providers';
import { createSchema as workspaceCreate } from '../../functions/admin/workspaces';
import { createSchema as assistantCreate, updateSchema as assistantUpdate } from '../../functions/assistants/routes/assistants';
import { updateSchema as messageUpdate } from '../../functions/assistants/routes/messages';
import { createRunSchema, createThreadAndRunSchema, threadInputSchema } from '../../functions/assistants/routes/run-input';
import { submitSchema as runSubmit, updateSchema as runUpdate } from '../../functions/assistants/routes/runs';
import { messageInputSchema } from '../../functions/assistants/routes/schemas';
import { updateSchema as threadUpdate } from '../../functions/assistants/routes/threads';
import { createJobSchema } from '../../functions/fine-tuning/schema';
import { chatSchema } from '../../functions/gateway/chat';
import { embeddingsSchema } from '../../functions/gateway/embeddings';
import { countTokensRequestSchema, messagesRequestSchema } from '../../functions/formats/messages/schema';
import { generateContentSchema } from '../../functions/formats/gemini/schema';
import { mcpServerCreateSchema as mcpServerCreate, mcpServerUpdateSchema as mcpServerUpdate } from '../../functions/mcp/admin-routes';
import { createSchema as guardrailCreate, updateSchema as guardrailUpdate } from '../../functions/guardrails/routes';
import { createBudgetSchema as budgetCreate, updateBudgetSchema as budgetUpdate } from '../../functions/policies/budget-model';
import { createSchema as policyCreate, updateSchema as policyUpdate } from '../../functions/policies/model';
import { createOverrideSchema as priceCreate, updateOverrideSchema as priceUpdate } from '../../functions/spend/price-overrides';
import { createSchema as promptCreate, runSchema as promptRun, updateSchema as promptUpdate } from '../../functions/prompts/schemas';
import { rerankBodySchema } from '../../functions/rerank/schema';
import { createBatchSchema } from '../../functions/batches/schema';
import { createMessageBatchSchema } from '../../functions/batches/message-batch';
import { FILE_PURPOSES, MAX_EXPIRY_SECONDS, MIN_EXPIRY_SECONDS } from '../../functions/files/types';
import { completeUploadSchema as uploadComplete, createUploadSchema as uploadCreate, MAX_PART_BYTES } from '../../functions/files/upload-input';
import { gatewayConfigSchema } from '../../functions/shared/gateway-config';
import { body, op, page, workspaceId, type Operation, type QueryParameter } from './operation-kit';
import { INDEXED_METADATA_KEYS } from '../../functions/shared/tables';
import { GRANULARITIES } from '../../functions/spend/periods';

/** The configs API validates `config` against the gateway config schema in a second step. */
const configBody = (schema: typeof configCreate | typeof configUpdate) => zm.extend(schema, { config: zm.optional(gatewayConfigSchema) });

/** `POST /v1/files`: the multipart form functions/files/upload.ts reads. */
const fileUploadForm = {
  type: 'object',
  required: ['file', 'purpose'],
  properties: {
    file: { type: 'string', format: 'binary', description: 'The file, with its filename. A batch file is JSON Lines, checked line by line.' },
    purpose: { type: 'string', enum: FILE_PURPOSES },
    'expires_after[anchor]': { type: 'string', enum: ['created_at'] },
    'expires_after[seconds]': { type: 'integer', minimum: MIN_EXPIRY_SECONDS, maximum: MAX_EXPIRY_SECONDS },
  },
};

/** `POST /v1/uploads/{upload_id}/parts`: one part, up to MAX_PART_BYTES (functions/files/upload-input.ts). */
const uploadPartForm = {
  type: 'object',
  required: ['data'],
  properties: {
    data: { type: 'string', format: 'binary', description: `The part's bytes, at most ${MAX_PART_BYTES} (the 10 MiB request cap less the form's framing).` },
  },
};

/** The six operations of a kind of policy (functions/policies/routes.ts serves them alike). */
function policyOperations(
  base: string,
  noun: { one: string; many: string },
  schemaName: string,
  create: zm.ZodMiniType,
  update: zm.ZodMiniType,
  listFilters: readonly QueryParameter[] = [],
): Operation[] {
  const inWorkspace = { query: [workspaceId] };
  return [
    op('POST', base, 'workspace-admin', `Create a ${noun.one}`, 'object', body(`${schemaName}Create`, create)),
    op('GET', base, 'viewer', `List ${noun.many}`, 'object', {
      query: [
        workspaceId,
        { name: 'status', type: 'string', description: '`active` or `archived`.' },
        ...listFilters,
        { name: 'page_size', type: 'integer', description: 'Page size.' },
        { name: 'current_page', type: 'integer', description: 'Page number, from 0.' },
      ],
    }),
    op('GET', `${base}/{id}`, 'viewer', `Retrieve a ${noun.one}`, 'object', inWorkspace),
    op('PUT', `${base}/{id}`, 'workspace-admin', `Update a ${noun.one}`, 'object', { ...body(`${schemaName}Update`, update), ...inWorkspace }),
    op('DELETE', `${base}/{id}`, 'workspace-admin', `Delete a ${noun.one}`, 'object', inWorkspace),
    op('POST', `${base}/{id}/archive`, 'workspace-admin', `Archive a ${noun.one}`, 'object', inWorkspace),
  ];
}

/**
 * The operations that honour `Idempotency-Key`: their routes run the `idempotency` middleware
 * (functions/shared/http/idempotency.ts); test/unit/openapi.test.ts holds the two together.
 */
export const IDEMPOTENT_OPERATIONS: ReadonlySet<string> = new Set([
  'POST /v1/chat/completions',
  'POST /v1/responses',
  'POST /v1/messages',
  'POST /v1beta/models/{proxy+}',
  'POST /v1/models/{proxy+}',
  'POST /v1/embeddings',
  'POST /v1/rerank',
  'POST /v1/workspaces',
  'POST /v1/api-keys',
  'POST /v1/providers',
  'POST /v1/configs',
  'POST /v1/guardrails',
  'POST /v1/mcp-servers',
  'POST /v1/prices',
  'POST /v1/policies/rate-limits',
  'POST /v1/policies/budgets',
  'POST /v1/prompts',
  'PUT /v1/prompts/{promptId}',
  'POST /v1/prompts/{promptId}/completions',
  'POST /v1/assistants',
  'POST /v1/threads',
  'POST /v1/threads/{thread_id}/messages',
  'POST /v1/threads/runs',
  'POST /v1/threads/{thread_id}/runs',
  'POST /v1/fine_tuning/jobs',
  'POST /v1/uploads',
  'POST /v1/batches',
  'POST /v1/messages/batches',
]);

export const OPERATIONS: readonly Operation[] = [
  // gateway: inference
  op('POST', '/v1/chat/completions', 'gateway', 'Create a chat completion on any provider', 'stream', {
    ...body('ChatCompletionRequest', chatSchema),
    description:
      'OpenAI chat completions. Fields beyond these pass to the provider unchanged; `stream: true` answers server-sent events ending with `data: [DONE]`.',
  }),
  op('POST', '/v1/responses', 'gateway', 'Create a response (OpenAI Responses API) on any provider', 'stream', {
    ...body('ResponsesRequest', responsesRequestSchema),
    description:
      'OpenAI and Azure OpenAI: passed through. Other providers: translated through the chat path; `stream: true` answers Responses events; `store` (default true) keeps the response for `previous_response_id`.',
  }),
  op('POST', '/v1/responses/input_tokens', 'gateway', 'Count the input tokens of a Responses request on any provider', 'object', {
    ...body('ResponsesInputTokensRequest', responsesRequestSchema),
    description:
      'Answers `{object: "response.input_tokens", input_tokens}`. OpenAI and Azure OpenAI: passed through. Other providers: translated and counted by the provider\'s own count API, the tokenizer or an estimate, as `x-gateway-token-count-method` says (docs/token-counting.md).',
  }),
  op('GET', '/v1/responses/{id}', 'gateway', 'Retrieve a stored response', 'object'),
  op('DELETE', '/v1/responses/{id}', 'gateway', 'Delete a stored response', 'deleted'),
  op('GET', '/v1/responses/{id}/input_items', 'gateway', "List a stored response's input items", 'list', { query: [...page] }),
  op('POST', '/v1/messages', 'gateway', 'Create a message (Anthropic Messages API) on any provider with chat', 'stream', {
    ...body('MessagesRequest', messagesRequestSchema),
    description:
      "Anthropic's Messages API. On Anthropic (every target of the request, no guardrails) the body is passed through unchanged with the caller's `anthropic-version` and `anthropic-beta`; on any other provider it is translated through chat, answered as an Anthropic `message` or, with `stream: true`, Anthropic stream events. Errors are in Anthropic's shape (`{type: \"error\", error: {type, message}}`).",
  }),
  op('POST', '/v1/messages/count_tokens', 'gateway', 'Count the input tokens of a Messages request on any provider', 'object', {
    ...body('MessagesCountTokensRequest', countTokensRequestSchema),
    description:
      "Answers `{input_tokens}`. On Anthropic (every target of the request) passed through unchanged; elsewhere translated and counted by the provider's own count API (Bedrock, Gemini, Vertex AI), the model's tokenizer (OpenAI-family models) or an estimate, as `x-gateway-token-count-method` says (`provider`, `tokenizer`, `estimate`; docs/token-counting.md).",
  }),
  op('POST', '/v1beta/models/{proxy+}', 'gateway', 'Gemini API (v1beta) on any provider: {model}:generateContent and the other methods', 'stream', {
    ...body('GenerateContentRequest', generateContentSchema),
    description:
      "The path is `{model}:{method}`: `generateContent`, `streamGenerateContent?alt=sse` (Gemini SSE events), `countTokens` (any provider, see docs/token-counting.md), `embedContent` and `batchEmbedContents` (their own bodies). Translated through chat (or embeddings) on every provider; the gateway key may come as `x-goog-api-key` or `?key=`. Errors are in Google's shape (`{error: {code, message, status}}`). See docs/gemini.md.",
  }),
  op('POST', '/v1/models/{proxy+}', 'gateway', 'Gemini API (v1) on any provider: {model}:generateContent and the other methods', 'stream', {
    ...body('GenerateContentRequestV1', generateContentSchema),
    description: 'The same as `POST /v1beta/models/{model}:{method}`, for a Gemini client set to API version v1.',
  }),
  op('GET', '/v1/models', 'gateway', "List the provider's models (a config: every target's, each once)", 'list', {
    description:
      "Read through each provider's own API (Anthropic, Gemini, Bedrock, Cohere translated) and answered in OpenAI's shape. A config target that cannot answer is named in `x-gateway-models-unavailable`.",
  }),
  op('POST', '/v1/embeddings', 'gateway', 'Create embeddings', 'object', body('EmbeddingsRequest', embeddingsSchema)),
  op('POST', '/v1/audio/speech', 'gateway', 'Text to speech (body passed through)', 'passthrough', { body: { passthrough: 'application/json' } }),
  op('POST', '/v1/audio/transcriptions', 'gateway', 'Transcribe audio (multipart, passed through)', 'passthrough', {
    body: { passthrough: 'multipart/form-data' },
  }),
  op('POST', '/v1/audio/translations', 'gateway', 'Translate audio (multipart, passed through)', 'passthrough', {
    body: { passthrough: 'multipart/form-data' },
  }),
  ...(['GET', 'POST', 'PUT', 'DELETE'] as const).map((method) =>
    op(method, '/v1/{proxy+}', 'gateway', `Generic proxy (${method})`, 'passthrough', {
      description:
        "Any path no endpoint group owns: appended to the provider's base URL; status, headers and body come back unchanged, streamed chunk by chunk.",
      ...(method === 'POST' || method === 'PUT' ? { body: { passthrough: 'application/json' } } : {}),
    }),
  ),
  op(
    'POST',
    '/v1/rerank',
    'gateway',
    'Rerank documents (Cohere, Jina, Voyage, Pinecone, Bedrock, Azure AI)',
    'object',
    body('RerankRequest', rerankBodySchema),
  ),

  // admin
  op('POST', '/v1/workspaces', 'org-admin', 'Create a workspace', 'object', body('WorkspaceCreate', workspaceCreate)),
  op('GET', '/v1/workspaces', 'workspace-admin', "List the organisation's workspaces (a workspace admin's own only)", 'list', { query: page }),
  op('GET', '/v1/workspaces/{id}', 'workspace-admin', 'Retrieve a workspace (a workspace admin: its own)', 'object'),
  op('POST', '/v1/api-keys', 'workspace-admin', 'Create a gateway key (the secret is shown once)', 'object', body('ApiKeyCreate', apiKeyCreate)),
  op('GET', '/v1/api-keys', 'viewer', 'List gateway keys', 'list', { query: [...page, workspaceId] }),
  op('GET', '/v1/api-keys/{id}', 'viewer', 'Retrieve a gateway key', 'object', { query: [workspaceId] }),
  op('PUT', '/v1/api-keys/{id}', 'workspace-admin', "Change a gateway key's name or default config", 'object', {
    query: [workspaceId],
    ...body('ApiKeyUpdate', apiKeyUpdate),
  }),
  op('DELETE', '/v1/api-keys/{id}', 'workspace-admin', 'Revoke a gateway key', 'deleted', { query: [workspaceId] }),
  op(
    'POST',
    '/v1/providers',
    'workspace-admin',
    'Create a managed provider (credentials encrypted, never returned)',
    'object',
    body('ProviderCreate', providerCreate),
  ),
  op('GET', '/v1/providers', 'viewer', 'List managed providers', 'list', { query: page }),
  op('GET', '/v1/providers/catalog', 'viewer', 'List every provider the gateway speaks to: its routes, auth and required settings', 'list'),
  op('GET', '/v1/providers/{slug}', 'viewer', 'Retrieve a managed provider', 'object'),
  op('PUT', '/v1/providers/{slug}', 'workspace-admin', 'Update a managed provider', 'object', body('ProviderUpdate', providerUpdate)),
  op('DELETE', '/v1/providers/{slug}', 'workspace-admin', 'Delete a managed provider', 'deleted'),
  op('POST', '/v1/configs', 'workspace-admin', 'Save a config', 'object', body('ConfigCreate', configBody(configCreate))),
  op('GET', '/v1/configs', 'viewer', 'List saved configs', 'list', { query: page }),
  op('GET', '/v1/configs/{idOrSlug}', 'viewer', 'Retrieve a saved config', 'object'),
  op('PUT', '/v1/configs/{idOrSlug}', 'workspace-admin', 'Update a saved config', 'object', body('ConfigUpdate', configBody(configUpdate))),
  op('DELETE', '/v1/configs/{idOrSlug}', 'workspace-admin', 'Delete a saved config', 'deleted'),
  op('GET', '/v1/logs', 'member', 'List request logs, newest first', 'list', {
    query: [
      ...page,
      { name: 'trace_id', type: 'string', description: 'Only the records of this trace id.' },
      { name: 'api_key_id', type: 'string', description: 'Only the requests of this gateway key (its id).' },
      { name: 'provider', type: 'string', description: 'Only this provider.' },
      { name: 'model', type: 'string', description: 'Only this model.' },
      { name: 'status', type: 'integer', description: 'Only this HTTP status.' },
      { name: 'kind', type: 'string', description: '`mcp`: only MCP tool calls (docs/mcp.md).' },
      { name: 'mcp_server', type: 'string', description: 'Only tool calls to this MCP server (slug).' },
      { name: 'mcp_tool', type: 'string', description: 'Only calls of this tool (its name on its server).' },
      { name: 'mcp_status', type: 'string', description: 'Only tool calls that ended so: `ok`, `error`, `refused` or `timeout`.' },
      { name: 'from', type: 'integer', description: 'Created at or after (Unix seconds).' },
      { name: 'to', type: 'integer', description: 'Created at or before (Unix seconds).' },
      ...INDEXED_METADATA_KEYS.map((key) => ({
        name: `metadata.${key}`,
        type: 'string' as const,
        description: `Only records whose metadata ${key} equals this (indexed). Any other \`metadata.<key>=<value>\` narrows further, but needs an indexed key or trace_id beside it (400 otherwise).`,
      })),
    ],
  }),
  op('GET', '/v1/logs/{id}', 'member', 'Retrieve a request log record', 'object'),
  op('GET', '/v1/analytics/spend', 'member', 'Spend report: requests, tokens and cost per period and group', 'object', {
    description:
      'Summed from hourly counters kept as requests are logged. An `org-admin` key reads its organisation (or the workspace `workspace_id` names); any other key reads its own workspace. `data` has one row per period and group with requests (sparse), `totals` their sums.',
    query: [
      {
        name: 'group_by',
        type: 'string',
        description: '`workspace` (default), `api_key`, `provider`, `model` or `metadata.<key>` (requests that carry the key).',
      },
      { name: 'granularity', type: 'string', enum: GRANULARITIES, description: 'Bucket size (default `day`, UTC).' },
      {
        name: 'from',
        type: 'string',
        description: 'Start: ISO 8601 or Unix seconds, rounded down to the bucket (default: the start of the current UTC month).',
      },
      {
        name: 'to',
        type: 'string',
        description: 'End: ISO 8601 or Unix seconds, rounded up to the bucket (default: now). At most 31 days after `from` for hours, 366 for days.',
      },
      {
        name: 'workspace_id',
        type: 'string',
        description:
          "Admin keys: one workspace of the key's organisation (id or slug) instead of the whole organisation. Other keys: their own workspace only.",
      },
    ],
  }),
  op('GET', '/v1/openapi.json', 'member', 'This OpenAPI document', 'object', { description: 'Needs a gateway key of any role.' }),

  // guardrails
  op('POST', '/v1/guardrails', 'workspace-admin', 'Create a guardrail', 'object', body('GuardrailCreate', guardrailCreate)),
  op('GET', '/v1/guardrails', 'viewer', 'List guardrails', 'list', { query: [...page, workspaceId] }),
  op('GET', '/v1/guardrails/{idOrSlug}', 'viewer', 'Retrieve a guardrail (latest version)', 'object'),
  op('GET', '/v1/guardrails/{idOrSlug}/versions', 'viewer', "List a guardrail's versions", 'list'),
  op('PUT', '/v1/guardrails/{idOrSlug}', 'workspace-admin', 'Update a guardrail (new version)', 'object', body('GuardrailUpdate', guardrailUpdate)),
  op('DELETE', '/v1/guardrails/{idOrSlug}', 'workspace-admin', 'Delete a guardrail', 'deleted'),
  // MCP servers (docs/mcp.md)
  op('POST', '/v1/mcp-servers', 'workspace-admin', 'Register an MCP server (Streamable HTTP)', 'object', body('McpServerCreate', mcpServerCreate)),
  op('GET', '/v1/mcp-servers', 'viewer', 'List MCP servers', 'list', { query: [...page] }),
  op('GET', '/v1/mcp-servers/{slug}', 'viewer', 'Retrieve an MCP server (header names only, never secrets)', 'object'),
  op(
    'PATCH',
    '/v1/mcp-servers/{slug}',
    'workspace-admin',
    'Update an MCP server (a new `auth` replaces the old one)',
    'object',
    body('McpServerUpdate', mcpServerUpdate),
  ),
  op('DELETE', '/v1/mcp-servers/{slug}', 'workspace-admin', 'Delete an MCP server', 'deleted'),
  ...(['/v1/mcp', '/v1/mcp/{slug}'] as const).flatMap((path) => {
    const what =
      path === '/v1/mcp' ? "the workspace's MCP servers' tools, named `<slug>__<tool>`" : 'one registered MCP server as it is (tools, resources, prompts)';
    return [
      op('POST', path, 'gateway', `MCP (Streamable HTTP): ${what}`, 'passthrough', {
        body: { passthrough: 'application/json' },
        description:
          'A JSON-RPC message of the Model Context Protocol. `initialize` opens a session (`Mcp-Session-Id`); a tools/call with a progress token, from a client that accepts SSE, is answered as a server-sent stream. See docs/mcp.md.',
      }),
      op(
        'GET',
        path,
        'gateway',
        path === '/v1/mcp' ? 'MCP server-sent stream: not offered (405)' : "MCP server-sent stream of a session: the server's notifications",
        'passthrough',
      ),
      op('DELETE', path, 'gateway', 'End an MCP session (`Mcp-Session-Id`)', 'passthrough'),
    ];
  }),

  // policies: rate limits and budgets share their routes and rules
  ...policyOperations('/v1/policies/rate-limits', { one: 'rate-limit policy', many: 'rate-limit policies' }, 'RateLimitPolicy', policyCreate, policyUpdate, [
    { name: 'type', type: 'string', description: '`requests` or `tokens`.' },
    { name: 'unit', type: 'string', description: '`rpm`, `rph` or `rpd`.' },
  ]),
  ...policyOperations('/v1/policies/budgets', { one: 'budget', many: 'budgets' }, 'Budget', budgetCreate, budgetUpdate),

  // prices
  op('POST', '/v1/prices', 'workspace-admin', 'Create a price override for a provider and model', 'object', body('PriceOverrideCreate', priceCreate)),
  op('GET', '/v1/prices', 'viewer', "List a workspace's price overrides", 'list', { query: [workspaceId] }),
  op('GET', '/v1/prices/{id}', 'viewer', 'Retrieve a price override', 'object', { query: [workspaceId] }),
  op('PUT', '/v1/prices/{id}', 'workspace-admin', "Replace a price override's prices", 'object', {
    ...body('PriceOverrideUpdate', priceUpdate),
    query: [workspaceId],
  }),
  op('DELETE', '/v1/prices/{id}', 'workspace-admin', 'Delete a price override', 'deleted', { query: [workspaceId] }),

  // prompts
  op('POST', '/v1/prompts', 'workspace-admin', 'Create a prompt template', 'object', body('PromptCreate', promptCreate)),
  op('GET', '/v1/prompts', 'member', 'List prompt templates', 'list', {
    query: [...page, { name: 'collection_id', type: 'string', description: 'Only prompts of this collection.' }],
  }),
  op('GET', '/v1/prompts/{promptId}', 'member', 'Retrieve a prompt (`id`, `slug`, `@latest` or `@<n>`)', 'object'),
  op('PUT', '/v1/prompts/{promptId}', 'workspace-admin', 'Update a prompt (new version)', 'object', body('PromptUpdate', promptUpdate)),
  op('DELETE', '/v1/prompts/{promptId}', 'workspace-admin', 'Delete a prompt', 'deleted'),
  op('GET', '/v1/prompts/{promptId}/versions', 'member', "List a prompt's versions", 'list', { query: page }),
  op('PUT', '/v1/prompts/{promptId}/versions/{version}/publish', 'workspace-admin', 'Publish a version', 'object'),
  op('POST', '/v1/prompts/{promptId}/render', 'gateway', 'Render a prompt into a chat-completion body', 'object', body('PromptRun', promptRun)),
  op('POST', '/v1/prompts/{promptId}/completions', 'gateway', 'Run a prompt through the gateway', 'stream', body('PromptRun', promptRun)),

  // assistants
  op('POST', '/v1/assistants', 'gateway', 'Create an assistant', 'object', body('AssistantCreate', assistantCreate)),
  op('GET', '/v1/assistants', 'gateway', 'List assistants', 'list', { query: page }),
  op('GET', '/v1/assistants/{assistant_id}', 'gateway', 'Retrieve an assistant', 'object'),
  op('POST', '/v1/assistants/{assistant_id}', 'gateway', 'Modify an assistant', 'object', body('AssistantUpdate', assistantUpdate)),
  op('DELETE', '/v1/assistants/{assistant_id}', 'gateway', 'Delete an assistant', 'deleted'),
  op('POST', '/v1/threads', 'gateway', 'Create a thread', 'object', body('ThreadCreate', threadInputSchema)),
  op('GET', '/v1/threads/{thread_id}', 'gateway', 'Retrieve a thread', 'object'),
  op('POST', '/v1/threads/{thread_id}', 'gateway', 'Modify a thread', 'object', body('ThreadUpdate', threadUpdate)),
  op('DELETE', '/v1/threads/{thread_id}', 'gateway', 'Delete a thread', 'deleted'),
  op('POST', '/v1/threads/{thread_id}/messages', 'gateway', 'Add a message', 'object', body('MessageCreate', messageInputSchema)),
  op('GET', '/v1/threads/{thread_id}/messages', 'gateway', "List a thread's messages", 'list', {
    query: [...page, { name: 'run_id', type: 'string', description: 'Only messages created by this run.' }],
  }),
  op('GET', '/v1/threads/{thread_id}/messages/{message_id}', 'gateway', 'Retrieve a message', 'object'),
  op('POST', '/v1/threads/{thread_id}/messages/{message_id}', 'gateway', 'Modify a message', 'object', body('MessageUpdate', messageUpdate)),
  op('DELETE', '/v1/threads/{thread_id}/messages/{message_id}', 'gateway', 'Delete a message', 'deleted'),
  op('POST', '/v1/threads/runs', 'gateway', 'Create a thread and run it', 'stream', body('ThreadAndRunCreate', createThreadAndRunSchema)),
  op('POST', '/v1/threads/{thread_id}/runs', 'gateway', 'Create a run', 'stream', body('RunCreate', createRunSchema)),
  op('GET', '/v1/threads/{thread_id}/runs', 'gateway', "List a thread's runs", 'list', { query: page }),
  op('GET', '/v1/threads/{thread_id}/runs/{run_id}', 'gateway', 'Retrieve a run', 'object'),
  op('POST', '/v1/threads/{thread_id}/runs/{run_id}', 'gateway', 'Modify a run', 'object', body('RunUpdate', runUpdate)),
  op('POST', '/v1/threads/{thread_id}/runs/{run_id}/cancel', 'gateway', 'Cancel a run', 'object'),
  op('POST', '/v1/threads/{thread_id}/runs/{run_id}/submit_tool_outputs', 'gateway', 'Submit tool outputs', 'stream', body('SubmitToolOutputs', runSubmit)),
  op('GET', '/v1/threads/{thread_id}/runs/{run_id}/steps', 'gateway', "List a run's steps", 'list', { query: page }),
  op('GET', '/v1/threads/{thread_id}/runs/{run_id}/steps/{step_id}', 'gateway', 'Retrieve a run step', 'object'),

  // files (docs/files.md)
  op('POST', '/v1/files', 'gateway', 'Upload a file', 'object', { body: { form: fileUploadForm } }),
  op('GET', '/v1/files', 'gateway', 'List files', 'list', {
    query: [
      { name: 'purpose', type: 'string', enum: FILE_PURPOSES, description: 'Only files of this purpose.' },
      { name: 'limit', type: 'integer', description: 'Page size, 1-10000 (default 10000).' },
      { name: 'order', type: 'string', enum: ['asc', 'desc'], description: 'Sort order by creation time.' },
      { name: 'after', type: 'string', description: 'Cursor: a file id; the page starts after it.' },
    ],
  }),
  op('GET', '/v1/files/{file_id}', 'gateway', 'Retrieve a file', 'object'),
  op('GET', '/v1/files/{file_id}/content', 'gateway', "Retrieve a file's content", 'bytes'),
  op('DELETE', '/v1/files/{file_id}', 'gateway', 'Delete a file', 'deleted'),
  op('POST', '/v1/uploads', 'gateway', 'Create an upload (a file above the 10 MB request cap, in parts)', 'object', body('UploadCreate', uploadCreate)),
  op('POST', '/v1/uploads/{upload_id}/parts', 'gateway', 'Add a part to an upload', 'object', { body: { form: uploadPartForm } }),
  op('POST', '/v1/uploads/{upload_id}/complete', 'gateway', 'Complete an upload (creates the file)', 'object', body('UploadComplete', uploadComplete)),
  op('POST', '/v1/uploads/{upload_id}/cancel', 'gateway', 'Cancel an upload', 'object'),

  // batches (docs/batches.md)
  op('POST', '/v1/batches', 'gateway', 'Create a batch, run by the gateway on any provider', 'object', {
    ...body('BatchCreate', createBatchSchema),
    description:
      "Each line of the `batch` input file goes through the pipeline as the creating key, with the routing headers of this request (`x-gateway-provider: @slug`, `x-gateway-config`, metadata). With `x-gateway-batch-mode: native` the batch is handed to that one provider's own batch API (OpenAI, Anthropic) at its batch discount instead (docs/batches.md, native mode). A raw provider key goes to the provider's own Batches API.",
  }),
  op('GET', '/v1/batches', 'gateway', 'List batches', 'list', { query: page }),
  op('GET', '/v1/batches/{batch_id}', 'gateway', 'Retrieve a batch', 'object'),
  op('POST', '/v1/batches/{batch_id}/cancel', 'gateway', 'Cancel a batch', 'object'),

  // Anthropic's Message Batches API on the same engine (docs/batches.md); errors in Anthropic's shape
  op('POST', '/v1/messages/batches', 'gateway', 'Create a Message Batch (Anthropic Message Batches API) on any provider', 'object', {
    ...body('MessageBatchCreate', createMessageBatchSchema),
    description:
      "Answers Anthropic's `message_batch`. Each request's `params` is a Messages request (no `stream`), run through the pipeline as the creating key with the routing headers of this request; up to 100,000 requests, `custom_id` unique, 1-64 of `[a-zA-Z0-9_-]`.",
  }),
  op('GET', '/v1/messages/batches', 'gateway', 'List Message Batches', 'object', {
    description: 'Newest first: `{data, has_more, first_id, last_id}`.',
    query: [
      { name: 'limit', type: 'integer', description: 'Page size, 1-1000 (default 20).' },
      { name: 'after_id', type: 'string', description: 'Cursor: a batch id; the page holds the batches created before it.' },
      { name: 'before_id', type: 'string', description: 'Cursor: a batch id; the page holds the batches created after it.' },
    ],
  }),
  op('GET', '/v1/messages/batches/{message_batch_id}', 'gateway', 'Retrieve a Message Batch', 'object'),
  op('DELETE', '/v1/messages/batches/{message_batch_id}', 'gateway', 'Delete an ended Message Batch', 'object', {
    description: 'Answers `{id, type: "message_batch_deleted"}`; a batch still processing is a 409 (cancel it first).',
  }),
  op('POST', '/v1/messages/batches/{message_batch_id}/cancel', 'gateway', 'Cancel a Message Batch', 'object'),
  op('GET', '/v1/messages/batches/{message_batch_id}/results', 'gateway', "Stream an ended Message Batch's results (JSON Lines)", 'bytes', {
    description:
      'One `{custom_id, result}` line per request, in request order: `succeeded` (`message`), `errored` (`error`), `canceled` or `expired`. Served as `application/x-jsonl`; a batch still processing is a 409.',
  }),

  // fine-tuning
  op('POST', '/v1/fine_tuning/jobs', 'gateway', 'Create a fine-tuning job', 'object', body('FineTuningJobCreate', createJobSchema)),
  op('GET', '/v1/fine_tuning/jobs', 'gateway', 'List fine-tuning jobs', 'list', { query: page }),
  op('GET', '/v1/fine_tuning/jobs/{fine_tuning_job_id}', 'gateway', 'Retrieve a fine-tuning job', 'object'),
  op('POST', '/v1/fine_tuning/jobs/{fine_tuning_job_id}/cancel', 'gateway', 'Cancel a fine-tuning job', 'object'),
  op('GET', '/v1/fine_tuning/jobs/{fine_tuning_job_id}/events', 'gateway', "List a job's events", 'list', { query: page }),
];

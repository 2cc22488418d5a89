import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startAllFakes, type AllFakes } from '../fakes';
import { startFakeMcp, type FakeMcp } from '../support/fake-mcp';
import { FAKE_AWS, manageFakes } from '../support/managed-fakes';
import { call, errorOf, startTestGateway } from '../support/gateway';

// Server-side MCP tools in the Responses API on providers without them: the gateway lists the
// MCP server's tools, offers them to the model, calls them and feeds the results back. Driven
// through the openai SDK, against fake providers (Anthropic, an OpenAI-compatible one) whose
// "model" calls the first tool offered when asked about the weather and answers
// `tool said: <result>` once it has a tool result, and fake MCP servers built with the SDK.
let gw: LocalGateway;
let fakes: AllFakes;
let mcp: FakeMcp;
/** An OpenAI chat-completions upstream whose model calls the first tool every turn it may. */
let looping: http.Server;
let loopingTurns = 0;

const MODELS: Record<string, string> = { 'm-claude': 'claude-sonnet-4-5', 'm-mistral': 'mistral-large-latest' };

function startLoopingModel(): Promise<http.Server> {
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { tools?: Array<{ function: { name: string } }>; tool_choice?: unknown };
    loopingTurns++;
    const tool = body.tool_choice === 'none' ? undefined : body.tools?.[0]?.function.name;
    const message = tool
      ? {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: `call_${loopingTurns}`, type: 'function', function: { name: tool, arguments: '{"location":"Loop"}' } }],
        }
      : { role: 'assistant', content: 'done looping' };
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        id: `chatcmpl-${loopingTurns}`,
        object: 'chat.completion',
        created: 1,
        model: 'looper',
        choices: [{ index: 0, message, finish_reason: tool ? 'tool_calls' : 'stop', logprobs: null }],
        usage: { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11 },
      }),
    );
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

beforeAll(async () => {
  mcp = await startFakeMcp(64 * 1024);
  fakes = await startAllFakes({}, { credentials: FAKE_AWS });
  looping = await startLoopingModel();
  gw = await startTestGateway();
  await manageFakes(gw, fakes, 'm');
  const providers = [
    { slug: 'm-mistral', provider: 'mistral-ai', api_key: 'sk-mistral', custom_host: `${fakes.openai.url}/v1` },
    { slug: 'm-looper', provider: 'mistral-ai', api_key: 'sk-loop', custom_host: `http://127.0.0.1:${(looping.address() as AddressInfo).port}/v1` },
  ];
  for (const body of providers) expect((await call(gw, 'POST', '/v1/providers', { body })).status).toBe(200);
  const servers = [
    { slug: 'tools', url: `${mcp.url}/tools`, timeout_ms: 1000 },
    {
      slug: 'oauth',
      url: `${mcp.url}/oauth`,
      auth: { type: 'oauth_client_credentials', token_url: `${mcp.url}/token`, client_id: mcp.oauth.clientId, client_secret: mcp.oauth.clientSecret },
    },
  ];
  for (const body of servers) expect((await call(gw, 'POST', '/v1/mcp-servers', { body })).status).toBe(200);
});
afterAll(async () => {
  await gw?.stop();
  await fakes?.close();
  await mcp?.close();
  await new Promise((resolve) => looping?.close(resolve));
});
beforeEach(() => fakes.reset());

const client = (slug: string) =>
  new OpenAI({ baseURL: gw.baseUrl, apiKey: 'unused', maxRetries: 0, defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': `@${slug}` } });

type Item = { type: string; [k: string]: unknown };
const itemsOf = (output: unknown) => output as Item[];
/** The message text of an output (a streamed final response has no `output_text`). */
const textOf = (output: unknown) =>
  itemsOf(output)
    .flatMap((o) => (o.type === 'message' ? (o.content as Array<{ type: string; text?: string }>) : []))
    .map((c) => c.text ?? '')
    .join('');
const weatherTool = { type: 'mcp' as const, server_label: 'fake', server: 'tools', allowed_tools: ['weather'], require_approval: 'never' as const };

describe.each(Object.keys(MODELS))('mcp tools on %s', (slug) => {
  const model = MODELS[slug]!;

  it('lists the tools, calls the one the model asks for and answers with its result', async () => {
    const res = await client(slug).responses.create({ model, input: 'What is the weather in Rome?', tools: [weatherTool as never] });
    const output = itemsOf(res.output);
    const types = output.map((o) => o.type).filter((t) => t !== 'message');
    expect(types).toEqual(['mcp_list_tools', 'mcp_call']);
    expect(output[0]).toMatchObject({
      type: 'mcp_list_tools',
      server_label: 'fake',
      tools: [{ name: 'weather', input_schema: { type: 'object' }, description: 'Weather for a city' }],
    });
    const mcpCall = output.find((o) => o.type === 'mcp_call')!;
    expect(mcpCall).toMatchObject({ server_label: 'fake', name: 'weather', status: 'completed', error: null });
    expect(JSON.parse(mcpCall.arguments as string)).toEqual({ location: 'Rome' });
    expect(mcpCall.output).toBe('sunny in Rome');
    expect(output.at(-1)).toMatchObject({ type: 'message', role: 'assistant' });
    expect(res.output_text).toContain(`tool said: ${mcpCall.output as string}`);
    // Two model turns, their usage summed.
    const turns = slug === 'm-claude' ? fakes.anthropic.count('/messages') : fakes.openai.count('/chat/completions');
    expect(turns).toBe(2);
    expect(res.usage!.input_tokens).toBeGreaterThan(0);
  });

  it('streams the items with the mcp_list_tools and mcp_call events in order', async () => {
    const stream = client(slug).responses.stream({ model, input: 'What is the weather in Oslo?', tools: [weatherTool as never] });
    const events: Array<{ type: string; item?: Item; sequence_number: number }> = [];
    stream.on('event', (e) => events.push(e as never));
    const final = await stream.finalResponse();
    const seq = events.map((e) => e.sequence_number);
    expect(seq).toEqual(seq.map((_, i) => i));
    const mcpEvents = events
      .filter((e) => e.type.startsWith('response.mcp') || (e.type.startsWith('response.output_item') && e.item?.type.startsWith('mcp')))
      .map((e) => (e.item ? `${e.type}:${e.item.type}` : e.type));
    expect(mcpEvents).toEqual([
      'response.output_item.added:mcp_list_tools',
      'response.mcp_list_tools.in_progress',
      'response.mcp_list_tools.completed',
      'response.output_item.done:mcp_list_tools',
      'response.output_item.added:mcp_call',
      'response.mcp_call_arguments.delta',
      'response.mcp_call_arguments.done',
      'response.mcp_call.in_progress',
      'response.mcp_call.completed',
      'response.output_item.done:mcp_call',
    ]);
    const types = events.map((e) => e.type);
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
    // The answer's text streams after the call.
    expect(types.lastIndexOf('response.output_text.delta')).toBeGreaterThan(types.indexOf('response.mcp_call.completed'));
    const done = events.find((e) => e.type === 'response.output_item.done' && e.item?.type === 'mcp_call')!;
    expect(done.item).toMatchObject({ status: 'completed', output: 'sunny in Oslo' });
    expect(textOf(final.output)).toContain('tool said: sunny in Oslo');
  });

  it('require_approval (always by default) stops with an approval request; the approval continues it', async () => {
    const api = client(slug);
    const { require_approval: _never, ...tool } = weatherTool;
    const first = await api.responses.create({ model, input: 'What is the weather in Lima?', tools: [tool as never] });
    const request = itemsOf(first.output).find((o) => o.type === 'mcp_approval_request')!;
    expect(request).toMatchObject({ id: expect.stringMatching(/^mcpr_/), server_label: 'fake', name: 'weather', arguments: '{"location":"Lima"}' });
    expect(itemsOf(first.output).some((o) => o.type === 'mcp_call')).toBe(false);

    const second = await api.responses.create({
      model,
      previous_response_id: first.id,
      input: [{ type: 'mcp_approval_response', approval_request_id: request.id as string, approve: true }],
      tools: [tool as never],
    });
    const calls = itemsOf(second.output).filter((o) => o.type === 'mcp_call');
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ approval_request_id: request.id, name: 'weather', status: 'completed', output: 'sunny in Lima' });
    // The tools were listed in the first response: not again.
    expect(itemsOf(second.output).some((o) => o.type === 'mcp_list_tools')).toBe(false);
    expect(second.output_text).toContain(`tool said: ${calls[0]!.output as string}`);
  });
});

describe('approvals', () => {
  it('a refused approval runs nothing and tells the model so (streamed)', async () => {
    const api = client('m-claude');
    const tool = { ...weatherTool, require_approval: { never: { tool_names: ['fail'] } } };
    const first = await api.responses.create({ model: MODELS['m-claude']!, input: 'What is the weather in Quito?', tools: [tool as never] });
    const request = itemsOf(first.output).find((o) => o.type === 'mcp_approval_request')!;
    expect(request).toBeDefined();
    const stream = api.responses.stream({
      model: MODELS['m-claude']!,
      previous_response_id: first.id,
      input: [{ type: 'mcp_approval_response', approval_request_id: request.id as string, approve: false }],
      tools: [tool as never],
    });
    const final = await stream.finalResponse();
    expect(itemsOf(final.output).some((o) => o.type === 'mcp_call')).toBe(false);
    expect(textOf(final.output)).toContain('tool said: The user refused this tool call.');
  });

  it('an approval response for an unknown request is a 400 naming it', async () => {
    const res = await call(gw, 'POST', '/v1/responses', {
      headers: { 'x-gateway-provider': '@m-claude' },
      body: { model: MODELS['m-claude'], input: [{ type: 'mcp_approval_response', approval_request_id: 'mcpr_nope', approve: true }], tools: [weatherTool] },
    });
    expect(res.status).toBe(400);
    expect(errorOf(res)).toMatchObject({ param: 'input[0].approval_request_id', code: 'approval_request_not_found' });
  });
});

describe('servers, failures and bounds', () => {
  it('a server_url with headers and a stored server behind OAuth both work', async () => {
    const res = await client('m-mistral').responses.create({
      model: MODELS['m-mistral']!,
      input: 'What is the weather in Paris?',
      tools: [
        { type: 'mcp', server_label: 'secure', server_url: `${mcp.url}/secure`, headers: { 'x-api-token': mcp.headerToken }, require_approval: 'never' },
        { type: 'mcp', server_label: 'auth', server: 'oauth', require_approval: 'never' } as never,
      ],
    });
    const output = itemsOf(res.output);
    expect(output.filter((o) => o.type === 'mcp_list_tools').map((o) => [o.server_label, (o.tools as Item[]).map((t) => t.name)])).toEqual([
      ['secure', ['whoami']],
      ['auth', ['whoami']],
    ]);
    expect(output.find((o) => o.type === 'mcp_call')).toMatchObject({ server_label: 'secure', name: 'whoami', output: 'secure ok' });
    // The echoed tools keep no header values.
    expect(JSON.stringify(res.tools)).not.toContain(mcp.headerToken);
  });

  it('a failing tool gives an mcp_call with its error, and the model goes on', async () => {
    const res = await client('m-claude').responses.create({
      model: MODELS['m-claude']!,
      input: 'What is the weather in Bern?',
      tools: [{ ...weatherTool, allowed_tools: ['fail'] } as never],
    });
    const failed = itemsOf(res.output).find((o) => o.type === 'mcp_call')!;
    expect(failed).toMatchObject({ name: 'fail', status: 'failed', error: 'the tool failed', output: null });
    expect(res.status).toBe('completed');
    expect(res.output_text).toContain('tool said: Error: the tool failed');
  });

  it('a tool that never answers fails within the server timeout', async () => {
    const started = Date.now();
    const res = await client('m-claude').responses.create({
      model: MODELS['m-claude']!,
      input: 'What is the weather in Riga?',
      tools: [{ ...weatherTool, allowed_tools: ['stall'] } as never],
    });
    expect(Date.now() - started).toBeLessThan(8_000);
    const failed = itemsOf(res.output).find((o) => o.type === 'mcp_call')!;
    expect(failed).toMatchObject({ name: 'stall', status: 'failed', error: expect.stringContaining('did not answer within 1000 ms') });
  });

  it('max_tool_calls bounds the loop, and without it the rounds are capped', async () => {
    const api = client('m-looper');
    loopingTurns = 0;
    // `max_tool_calls` is a Responses field this version of the SDK's create params lacks.
    const limited = { model: 'looper', input: 'loop', tools: [weatherTool], max_tool_calls: 3 } as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming;
    const bounded = await api.responses.create(limited);
    expect(itemsOf(bounded.output).filter((o) => o.type === 'mcp_call')).toHaveLength(3);
    expect(bounded.output_text).toBe('done looping');
    expect(loopingTurns).toBe(4);

    loopingTurns = 0;
    const capped = await api.responses.create({ model: 'looper', input: 'loop', tools: [weatherTool as never] });
    expect(itemsOf(capped.output).filter((o) => o.type === 'mcp_call')).toHaveLength(20);
    expect(capped.output_text).toBe('done looping');
    expect(loopingTurns).toBe(21);
    expect(capped.usage!.input_tokens).toBe(21 * 10);
  }, 60_000);

  it('an unknown stored server is a 400 naming tools[i].server; a private server_url is refused', async () => {
    const unknown = await call(gw, 'POST', '/v1/responses', {
      headers: { 'x-gateway-provider': '@m-claude' },
      body: {
        model: MODELS['m-claude'],
        input: 'hi',
        tools: [
          { type: 'function', name: 'f' },
          { type: 'mcp', server_label: 'x', server: 'nope' },
        ],
      },
    });
    expect(unknown.status).toBe(400);
    expect(errorOf(unknown)).toMatchObject({ param: 'tools[1].server', code: 'mcp_server_not_found' });
    const blocked = await call(gw, 'POST', '/v1/responses', {
      headers: { 'x-gateway-provider': '@m-claude' },
      body: { model: MODELS['m-claude'], input: 'hi', tools: [{ type: 'mcp', server_label: 'x', server_url: 'http://169.254.169.254/mcp' }] },
    });
    expect(blocked.status).toBe(400);
    expect(errorOf(blocked)).toMatchObject({ param: 'tools[0].server_url', code: 'blocked_custom_host' });
  });
});

describe('on OpenAI itself', () => {
  it('a public server_url passes through unchanged', async () => {
    const tools = [{ type: 'mcp', server_label: 'docs', server_url: 'https://mcp.example.com/mcp', require_approval: 'never' }];
    await call(gw, 'POST', '/v1/responses', { headers: { 'x-gateway-provider': '@m-openai' }, body: { model: 'gpt-4o-mini', input: 'hi', tools } });
    const sent = fakes.openai.last()!;
    expect(sent.path).toMatch(/\/v1\/responses$/);
    expect((sent.body as { tools: unknown }).tools).toEqual(tools);
  });

  it('a stored server is run by the gateway, through chat completions', async () => {
    const res = await client('m-openai').responses.create({ model: 'gpt-4o-mini', input: 'What is the weather in Kyiv?', tools: [weatherTool as never] });
    expect(itemsOf(res.output).find((o) => o.type === 'mcp_call')).toMatchObject({ name: 'weather', status: 'completed', output: 'sunny in Kyiv' });
    expect(fakes.openai.count('/chat/completions')).toBe(2);
    expect(fakes.openai.count('/responses')).toBe(0);
  });
});

describe("Anthropic's mcp_servers on /v1/messages, on an OpenAI-compatible provider", () => {
  const anthropic = () =>
    new Anthropic({
      baseURL: gw.url,
      apiKey: 'unused',
      maxRetries: 0,
      defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': '@m-mistral' },
    });
  const servers = () => [{ type: 'url' as const, name: 'fake', url: `${mcp.url}/tools`, tool_configuration: { enabled: true, allowed_tools: ['weather'] } }];

  it('runs the tool and answers with mcp_tool_use and mcp_tool_result blocks', async () => {
    const message = await anthropic().beta.messages.create({
      model: MODELS['m-mistral']!,
      max_tokens: 200,
      messages: [{ role: 'user', content: 'What is the weather in Madrid?' }],
      mcp_servers: servers(),
      betas: ['mcp-client-2025-04-04'],
    });
    const blocks = message.content as unknown as Item[];
    expect(blocks.map((b) => b.type)).toEqual(['mcp_tool_use', 'mcp_tool_result', 'text']);
    expect(blocks[0]).toMatchObject({ name: 'weather', server_name: 'fake', input: { location: 'Madrid' } });
    expect(blocks[1]).toMatchObject({ tool_use_id: blocks[0]!.id, is_error: false, content: [{ type: 'text', text: 'sunny in Madrid' }] });
    expect(blocks[2]).toMatchObject({ text: 'tool said: sunny in Madrid' });
    expect(message.stop_reason).toBe('end_turn');
    expect(fakes.openai.count('/chat/completions')).toBe(2);
  });

  it('streams the same blocks', async () => {
    const stream = anthropic().beta.messages.stream({
      model: MODELS['m-mistral']!,
      max_tokens: 200,
      messages: [{ role: 'user', content: 'What is the weather in Porto?' }],
      mcp_servers: [{ type: 'url', name: 'fake', server: 'tools', tool_configuration: { allowed_tools: ['weather'] } } as never],
      betas: ['mcp-client-2025-04-04'],
    });
    const final = await stream.finalMessage();
    const blocks = final.content as unknown as Item[];
    expect(blocks.map((b) => b.type)).toEqual(['mcp_tool_use', 'mcp_tool_result', 'text']);
    expect(blocks[0]).toMatchObject({ name: 'weather', input: { location: 'Porto' } });
    expect(blocks[2]).toMatchObject({ text: 'tool said: sunny in Porto' });
  });

  it("an unknown stored server is a 400 in Anthropic's shape naming the field", async () => {
    const res = await call(gw, 'POST', '/v1/messages', {
      headers: { 'x-gateway-provider': '@m-mistral' },
      body: {
        model: MODELS['m-mistral'],
        max_tokens: 10,
        messages: [{ role: 'user', content: 'hi' }],
        mcp_servers: [{ type: 'url', name: 'x', server: 'nope' }],
      },
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringContaining("No MCP server 'nope'") } });
  });
});

describe('chat completions with x-gateway-mcp-servers', () => {
  const chatClient = () =>
    new OpenAI({
      baseURL: gw.baseUrl,
      apiKey: 'unused',
      maxRetries: 0,
      defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': '@m-claude', 'x-gateway-mcp-servers': 'tools' },
    });

  it("runs the stored servers' tools server-side and answers with the last turn, listing the calls", async () => {
    const completion = await chatClient().chat.completions.create({
      model: MODELS['m-claude']!,
      messages: [{ role: 'user', content: 'What is the weather in Turin?' }],
    });
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    // The stored server offers all its tools; the fake model calls the first one, echo.
    const calls = (completion as unknown as { mcp_calls: Item[] }).mcp_calls;
    expect(calls).toEqual([{ server: 'tools', name: 'echo', arguments: expect.any(String), output: 'echo: echo: What is the weather in Turin?', error: null }]);
    expect(completion.choices[0]!.message.content).toContain('tool said: echo: echo: What is the weather in Turin?');
  });

  it('streams the answer as chat chunks', async () => {
    const stream = await chatClient().chat.completions.create({
      model: MODELS['m-claude']!,
      messages: [{ role: 'user', content: 'What is the weather in Genoa?' }],
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toContain('tool said: echo: echo: What is the weather in Genoa?');
  });
});

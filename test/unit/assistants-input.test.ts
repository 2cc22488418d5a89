import { describe, expect, it } from 'vitest';
import type { GatewayRequest } from '../../functions/shared/http/types';

// Pure input handling of the assistants group: no storage is touched.
const { rejectUnsupportedTools, metadataSchema, messageInputSchema } = await import('../../functions/assistants/routes/schemas');
const { toContent, MAX_CONTENT_BYTES } = await import('../../functions/assistants/store/messages');
const { checkToolChoice } = await import('../../functions/assistants/routes/run-input');
const { assistantProviderFromHeaders } = await import('../../functions/assistants/credentials');
const { GatewayError } = await import('../../functions/shared/errors');
const { parseInput } = await import('../../functions/shared/validation');

function thrown(fn: () => unknown): InstanceType<typeof GatewayError> {
  try {
    fn();
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error('expected a GatewayError');
}

const request = (headers: Record<string, string>) => ({ headers }) as unknown as GatewayRequest;

describe('rejectUnsupportedTools', () => {
  it('names the tool type and the exact field wherever it appears', () => {
    const cases: Array<[unknown, string, string]> = [
      [{ tools: [{ type: 'function' }, { type: 'code_interpreter' }] }, 'tools[1].type', 'code_interpreter'],
      [{ tool_resources: { file_search: {} } }, 'tool_resources.file_search', 'file_search'],
      [{ tool_choice: { type: 'code_interpreter' } }, 'tool_choice.type', 'code_interpreter'],
      [{ attachments: [{ file_id: 'f', tools: [{ type: 'file_search' }] }] }, 'attachments[0].tools[0].type', 'file_search'],
      [{ messages: [{}, { attachments: [{ tools: [{ type: 'code_interpreter' }] }] }] }, 'messages[1].attachments[0].tools[0].type', 'code_interpreter'],
      [
        { additional_messages: [{ attachments: [{ tools: [{ type: 'file_search' }] }] }] },
        'additional_messages[0].attachments[0].tools[0].type',
        'file_search',
      ],
      [{ thread: { tool_resources: { code_interpreter: {} } } }, 'thread.tool_resources.code_interpreter', 'code_interpreter'],
    ];
    for (const [body, param, type] of cases) {
      const err = thrown(() => rejectUnsupportedTools(body));
      expect(err.status).toBe(400);
      expect(err.param).toBe(param);
      expect(err.code).toBe('unsupported_tool');
      expect(err.message).toContain(type);
    }
  });

  it('lets function tools and look-alikes inside function schemas through', () => {
    expect(() =>
      rejectUnsupportedTools({
        tools: [{ type: 'function', function: { name: 'f', parameters: { properties: { tools: { type: 'code_interpreter' } } } } }],
        tool_choice: 'auto',
        tool_resources: {},
      }),
    ).not.toThrow();
  });
});

describe('metadata and message input', () => {
  it('enforces 16 pairs, 64-character keys and 512-character values', () => {
    expect(thrown(() => parseInput(metadataSchema, Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, ''])), 'metadata')).message).toContain(
      '16',
    );
    expect(thrown(() => parseInput(metadataSchema, { ['k'.repeat(65)]: 'v' }, 'metadata')).message).toContain('64');
    expect(thrown(() => parseInput(metadataSchema, { k: 'v'.repeat(513) }, 'metadata')).param).toBe('metadata.k');
    expect(parseInput(metadataSchema, { ['k'.repeat(64)]: 'v'.repeat(512) })).toBeTruthy();
  });

  it('turns string and array content into content items', () => {
    expect(toContent('hi', 'content')).toEqual([{ type: 'text', text: { value: 'hi', annotations: [] } }]);
    const parsed = parseInput(messageInputSchema, {
      role: 'user',
      content: [
        { type: 'text', text: 'a' },
        { type: 'image_url', image_url: { url: 'https://x.test/a.png' } },
        { type: 'image_file', image_file: { file_id: 'file-1', detail: 'high' } },
      ],
    });
    expect(toContent(parsed.content, 'content')).toEqual([
      { type: 'text', text: { value: 'a', annotations: [] } },
      { type: 'image_url', image_url: { url: 'https://x.test/a.png', detail: 'auto' } },
      { type: 'image_file', image_file: { file_id: 'file-1', detail: 'high' } },
    ]);
    expect(thrown(() => parseInput(messageInputSchema, { role: 'user', content: [{ type: 'audio' }] })).param).toContain('content');
  });

  it('refuses content larger than one stored message holds', () => {
    const big = 'é'.repeat(MAX_CONTENT_BYTES / 2 + 10);
    const err = thrown(() => toContent([{ type: 'text', text: big }], 'additional_messages[0].content'));
    expect(err.param).toBe('additional_messages[0].content');
  });
});

describe('tool_choice and credentials', () => {
  const tool = { type: 'function' as const, function: { name: 'get_weather' } };
  it('requires a forced function to be among the tools', () => {
    expect(() => checkToolChoice({ type: 'function', function: { name: 'get_weather' } }, [tool])).not.toThrow();
    expect(thrown(() => checkToolChoice({ type: 'function', function: { name: 'other' } }, [tool])).param).toBe('tool_choice.function.name');
    expect(thrown(() => checkToolChoice('required', [])).param).toBe('tool_choice');
  });

  it('accepts managed providers only', () => {
    expect(assistantProviderFromHeaders(request({ 'x-gateway-provider': '@team-openai', authorization: 'Bearer placeholder' }))).toBe('team-openai');
    expect(assistantProviderFromHeaders(request({ 'x-gateway-virtual-key': 'legacy' }))).toBe('legacy');
    expect(assistantProviderFromHeaders(request({}))).toBeUndefined();
    const rawKey = thrown(() => assistantProviderFromHeaders(request({ 'x-gateway-provider': 'openai', authorization: 'Bearer sk-raw' })));
    expect(rawKey).toMatchObject({ status: 400, code: 'managed_provider_required', param: 'x-gateway-provider' });
    expect(rawKey.message).not.toContain('sk-raw');
    expect(thrown(() => assistantProviderFromHeaders(request({ 'x-gateway-provider': '@a', 'x-gateway-virtual-key': 'b' }))).code).toBe(
      'contradictory_provider',
    );
    expect(thrown(() => assistantProviderFromHeaders(request({ 'x-gateway-provider': '@a', 'x-gateway-aws-secret-access-key': 's' }))).param).toBe(
      'x-gateway-aws-secret-access-key',
    );
  });
});

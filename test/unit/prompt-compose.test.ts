import { describe, expect, it } from 'vitest';
import { completionBody, composeChatBody } from '../../functions/prompts/compose';
import { parsePromptRef } from '../../functions/prompts/ref';
import { parseRunBody, parseUpdateBody, versionFields } from '../../functions/prompts/schemas';
import type { PromptVersion } from '../../functions/prompts/types';
import type { GatewayError } from '../../functions/shared/errors';

const version = (over: Partial<PromptVersion> = {}): PromptVersion => ({
  prompt_id: 'p',
  prompt_version_id: 'v',
  version: 1,
  created_at: 0,
  string: 'hi',
  parameters: { temperature: 0.7, max_tokens: 100, top_p: 0.9 },
  model: 'gpt-4o-mini',
  virtual_key: null,
  version_description: null,
  functions: null,
  tools: null,
  tool_choice: null,
  is_raw_template: 0,
  prompt_metadata: null,
  ...over,
});

const messages = [{ role: 'user' as const, content: 'hi' }];

function errorOf(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    return err as GatewayError;
  }
  throw new Error('expected an error');
}

describe('composeChatBody', () => {
  it('puts model and messages first, then saved parameters with max_tokens mapped', () => {
    const data = composeChatBody(version(), messages, { variables: {} });
    expect(data).toEqual({ model: 'gpt-4o-mini', messages, temperature: 0.7, top_p: 0.9, max_completion_tokens: 100 });
    expect(Object.keys(data).slice(0, 2)).toEqual(['model', 'messages']);
  });

  it('root-level request values override saved ones; max_tokens from the request wins over saved max_completion_tokens', () => {
    const v = version({ parameters: { temperature: 0.7, max_completion_tokens: 50, response_format: { type: 'json_object' } } });
    const data = composeChatBody(v, messages, { variables: { x: 1 }, temperature: 0, max_tokens: 7, model: 'other' });
    expect(data).toEqual({ model: 'other', messages, temperature: 0, max_completion_tokens: 7, response_format: { type: 'json_object' } });
    expect(data).not.toHaveProperty('variables');
    expect(data).not.toHaveProperty('max_tokens');
  });

  it('an explicit max_completion_tokens beats max_tokens from the same request', () => {
    expect(composeChatBody(version(), messages, { variables: {}, max_tokens: 5, max_completion_tokens: 9 }).max_completion_tokens).toBe(9);
  });

  it('adds tools, functions and tool_choice from the version (tool_choice only with tools)', () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];
    const withTools = composeChatBody(version({ tools, tool_choice: 'auto' }), messages, { variables: {} });
    expect(withTools.tools).toEqual(tools);
    expect(withTools.tool_choice).toBe('auto');
    const noTools = composeChatBody(version({ tools: [], tool_choice: 'auto' }), messages, { variables: {} });
    expect(noTools).not.toHaveProperty('tools');
    expect(noTools).not.toHaveProperty('tool_choice');
  });

  it('completion bodies carry stream options only when streaming', () => {
    const data = composeChatBody(version({ parameters: { stream_options: { include_usage: true } } }), messages, { variables: {} });
    expect(completionBody(data, false)).not.toHaveProperty('stream_options');
    expect(completionBody(data, false)).not.toHaveProperty('stream');
    expect(completionBody(data, true)).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });
});

describe('request bodies', () => {
  it('render/run bodies need variables and keep hyperparameters at the root', () => {
    expect(errorOf(() => parseRunBody({})).param).toBe('variables');
    expect(errorOf(() => parseRunBody({ variables: [] })).param).toBe('variables');
    expect(errorOf(() => parseRunBody({ variables: {}, messages: [] })).param).toBe('messages');
    expect(errorOf(() => parseRunBody({ variables: {}, hyperparameters: { temperature: 1 } })).param).toBe('hyperparameters');
    expect(errorOf(() => parseRunBody({ variables: {}, temperature: 'hot' })).param).toBe('temperature');
    expect(parseRunBody({ variables: { a: 1 }, temperature: 0.1, custom_field: true })).toMatchObject({ temperature: 0.1, custom_field: true });
  });

  it('a strict update names every missing runnable field; a patch needs none', () => {
    const err = errorOf(() => parseUpdateBody({ model: 'x' }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('string, parameters');
    expect(err.param).toBe('string');
    expect(parseUpdateBody({ patch: true, model: 'x' })).toEqual({ patch: true, model: 'x' });
  });

  it('versionFields: a patch keeps absent fields and clears nulls; strict leaves absent optional fields empty', () => {
    const base = version({ virtual_key: 'vk', version_description: 'old', tools: [{ type: 'function' }] });
    const patched = versionFields({ model: 'new', version_description: null }, base);
    expect(patched).toMatchObject({ model: 'new', string: 'hi', virtual_key: 'vk', version_description: null, tools: [{ type: 'function' }] });
    const strict = versionFields({ string: 's', parameters: {}, model: 'm' });
    expect(strict).toEqual({
      string: 's',
      parameters: {},
      model: 'm',
      virtual_key: null,
      version_description: null,
      functions: null,
      tools: null,
      tool_choice: null,
      is_raw_template: 0,
      prompt_metadata: null,
    });
  });
});

describe('promptId references', () => {
  it('parses the id or slug and the version selector', () => {
    expect(parsePromptRef('my-slug')).toMatchObject({ ref: 'my-slug', selector: { kind: 'published' } });
    expect(parsePromptRef('my-slug@latest')).toMatchObject({ ref: 'my-slug', selector: { kind: 'latest' } });
    expect(parsePromptRef('my-slug@12')).toMatchObject({ ref: 'my-slug', selector: { kind: 'number', n: 12 } });
    expect(errorOf(() => parsePromptRef('my-slug@newest')).status).toBe(400);
    expect(errorOf(() => parsePromptRef('@3')).status).toBe(404);
  });
});

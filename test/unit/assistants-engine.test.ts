import { describe, expect, it } from 'vitest';
import type { Message, Run } from '../../functions/assistants/types';

// Pure parts of the run engine: truncation, the chat request, ids, limits, error codes.
const { truncateMessages, buildChatRequest, estimateTokens, toChatMessage } = await import('../../functions/assistants/engine/request');
const { callIds, addUsage, ZERO_USAGE } = await import('../../functions/assistants/engine/state');
const { lastErrorCode } = await import('../../functions/assistants/engine/call');
const { limitReason } = await import('../../functions/assistants/engine/model-step');

let seq = 0;
function message(role: 'user' | 'assistant', text: string, extra: Partial<Message> = {}): Message {
  seq++;
  return {
    id: `msg_${String(seq).padStart(4, '0')}`,
    object: 'thread.message',
    created_at: 1,
    thread_id: 'thread_1',
    status: 'completed',
    incomplete_details: null,
    completed_at: 1,
    incomplete_at: null,
    role,
    content: [{ type: 'text', text: { value: text, annotations: [] } }],
    assistant_id: null,
    run_id: null,
    attachments: [],
    metadata: {},
    ...extra,
  };
}

function run(overrides: Partial<Run> = {}): Run {
  return {
    id: 'run_1',
    object: 'thread.run',
    created_at: 1,
    thread_id: 'thread_1',
    assistant_id: 'asst_1',
    status: 'in_progress',
    required_action: null,
    last_error: null,
    expires_at: null,
    started_at: 1,
    cancelled_at: null,
    failed_at: null,
    completed_at: null,
    incomplete_details: null,
    model: 'gpt-4o-mini',
    instructions: 'Be brief.',
    tools: [],
    metadata: {},
    usage: null,
    temperature: 1,
    top_p: 1,
    max_prompt_tokens: null,
    max_completion_tokens: null,
    truncation_strategy: { type: 'auto', last_messages: null },
    tool_choice: 'auto',
    parallel_tool_calls: true,
    response_format: 'auto',
    ...overrides,
  };
}

const texts = (ms: Message[]) => ms.map((m) => (m.content[0]!.type === 'text' ? m.content[0]!.text.value : ''));

describe('truncation_strategy', () => {
  const thread = ['one', 'two', 'three', 'four'].map((t, i) => message(i % 2 ? 'assistant' : 'user', t));

  it('last_messages keeps the N most recent messages (at least one)', () => {
    expect(texts(truncateMessages(thread, { type: 'last_messages', last_messages: 2 }, null))).toEqual(['three', 'four']);
    expect(texts(truncateMessages(thread, { type: 'last_messages', last_messages: 10 }, null))).toEqual(['one', 'two', 'three', 'four']);
    expect(texts(truncateMessages(thread, { type: 'last_messages', last_messages: 0 }, null))).toEqual(['four']);
  });

  it('auto keeps everything without max_prompt_tokens', () => {
    expect(truncateMessages(thread, { type: 'auto', last_messages: null }, null)).toHaveLength(4);
  });

  it('auto drops the oldest messages that do not fit max_prompt_tokens, always keeping the newest', () => {
    const long = [message('user', 'x'.repeat(2000)), message('assistant', 'y'.repeat(400)), message('user', 'z'.repeat(400))];
    const cost = estimateTokens('y'.repeat(400));
    expect(cost).toBe(104);
    expect(texts(truncateMessages(long, { type: 'auto', last_messages: null }, 256)).map((t) => t[0])).toEqual(['y', 'z']);
    expect(texts(truncateMessages(long, { type: 'auto', last_messages: null }, 150)).map((t) => t[0])).toEqual(['z']);
    expect(texts(truncateMessages(long, { type: 'auto', last_messages: null }, 10)).map((t) => t[0])).toEqual(['z']);
  });
});

describe('the chat request of a model call', () => {
  it('puts the run instructions first, then the thread, then the run’s tool turns', () => {
    const req = buildChatRequest({
      run: run({ instructions: 'Assistant says hi.\n\nExtra for this run.' }),
      threadMessages: [message('user', 'Weather in Oslo?')],
      turns: [
        {
          text: 'Let me check.',
          toolCalls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Oslo"}' }, output: '3C' }],
        },
      ],
      used: ZERO_USAGE,
    });
    expect(req.messages).toEqual([
      { role: 'system', content: 'Assistant says hi.\n\nExtra for this run.' },
      { role: 'user', content: 'Weather in Oslo?' },
      {
        role: 'assistant',
        content: 'Let me check.',
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Oslo"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '3C' },
    ]);
    expect(req).toMatchObject({ model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true } });
    expect(req).not.toHaveProperty('tools');
    expect(req).not.toHaveProperty('tool_choice');
    expect(req).not.toHaveProperty('temperature');
    expect(req).not.toHaveProperty('top_p');
    expect(req).not.toHaveProperty('response_format');
    expect(req).not.toHaveProperty('max_completion_tokens');
  });

  it('passes tools, tool_choice, parallel_tool_calls, response_format, sampling and the remaining completion budget', () => {
    const tool = { type: 'function' as const, function: { name: 'lookup', parameters: { type: 'object' } } };
    const req = buildChatRequest({
      run: run({
        instructions: '',
        tools: [tool],
        tool_choice: { type: 'function', function: { name: 'lookup' } },
        parallel_tool_calls: false,
        response_format: { type: 'json_object' },
        temperature: 0.2,
        top_p: 0.9,
        max_completion_tokens: 300,
      }),
      threadMessages: [message('user', 'q')],
      turns: [],
      used: { prompt_tokens: 50, completion_tokens: 120, total_tokens: 170 },
    });
    expect(req.messages).toEqual([{ role: 'user', content: 'q' }]);
    expect(req).toMatchObject({
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }],
      tool_choice: { type: 'function', function: { name: 'lookup' } },
      parallel_tool_calls: false,
      response_format: { type: 'json_object' },
      temperature: 0.2,
      top_p: 0.9,
      max_completion_tokens: 180,
    });
  });

  it('applies the truncation strategy to the thread but never to the run’s own turns', () => {
    const req = buildChatRequest({
      run: run({ instructions: '', truncation_strategy: { type: 'last_messages', last_messages: 1 } }),
      threadMessages: [message('user', 'old'), message('user', 'new')],
      turns: [{ text: null, toolCalls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' }, output: null }] }],
      used: ZERO_USAGE,
    });
    expect(req.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(req.messages[1]).toMatchObject({ content: null });
    expect(req.messages[2]).toEqual({ role: 'tool', tool_call_id: 'c', content: '' });
  });

  it('maps message content: text joined, image URLs as parts, image files left out, assistant text', () => {
    const withImage = message('user', 'look', {
      content: [
        { type: 'text', text: { value: 'look', annotations: [] } },
        { type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'low' } },
        { type: 'image_file', image_file: { file_id: 'file-1', detail: 'auto' } },
      ],
    });
    expect(toChatMessage(withImage)).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'look' },
        { type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'low' } },
      ],
    });
    expect(toChatMessage(message('assistant', 'sure'))).toEqual({ role: 'assistant', content: 'sure' });
  });
});

describe('engine ids, limits and error codes', () => {
  it('gives a call the same ids for the same run, call and clock, ordered message step < message < tool step', () => {
    const a = callIds('run_x', 0, 1_700_000_000_000);
    expect(callIds('run_x', 0, 1_700_000_000_000)).toEqual(a);
    expect(callIds('run_x', 1, 1_700_000_000_000)).not.toEqual(a);
    expect(a.messageStep.startsWith('step_')).toBe(true);
    expect(a.message.startsWith('msg_')).toBe(true);
    expect(a.messageStep.slice(5) < a.toolStep.slice(5)).toBe(true);
    expect(a.messageStep.slice(5, 15) < a.message.slice(4, 14)).toBe(true);
    const later = callIds('run_x', 1, 1_700_000_000_500);
    expect(later.messageStep > a.toolStep).toBe(true);
    expect(a.message).toHaveLength('msg_'.length + 26);
  });

  it('reports which token limit a call exceeded (prompt first; a cut answer is a completion overrun)', () => {
    const total = { prompt_tokens: 300, completion_tokens: 10, total_tokens: 310 };
    expect(limitReason(run({ max_prompt_tokens: 256 }), total, 'stop')).toBe('max_prompt_tokens');
    expect(limitReason(run({ max_prompt_tokens: 300 }), total, 'stop')).toBeUndefined();
    expect(limitReason(run({ max_completion_tokens: 256 }), total, 'length')).toBe('max_completion_tokens');
    expect(limitReason(run({ max_completion_tokens: 256 }), { ...total, completion_tokens: 257 }, 'stop')).toBe('max_completion_tokens');
    expect(limitReason(run(), total, 'length')).toBeUndefined();
    expect(addUsage(total, { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 })).toEqual({
      prompt_tokens: 301,
      completion_tokens: 12,
      total_tokens: 313,
    });
  });

  it('chooses last_error.code by status', () => {
    expect(lastErrorCode(429)).toBe('rate_limit_exceeded');
    expect(lastErrorCode(400)).toBe('invalid_prompt');
    expect(lastErrorCode(404)).toBe('invalid_prompt');
    expect(lastErrorCode(401)).toBe('server_error');
    expect(lastErrorCode(500)).toBe('server_error');
    expect(lastErrorCode(503)).toBe('server_error');
  });
});

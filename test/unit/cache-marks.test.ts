import { describe, expect, it } from 'vitest';
import { withoutCacheMarks } from '../../functions/providers/_shared/cache-marks';
import type { ChatRequest } from '../../functions/providers/types';

describe('withoutCacheMarks', () => {
  it('returns the very request when it has no marks (no copy on the usual path)', () => {
    const body: ChatRequest = {
      model: 'm',
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'a' }] },
        { role: 'user', content: 'hi' },
      ],
      tools: [{ type: 'function', function: { name: 't' } }],
    };
    expect(withoutCacheMarks(body)).toBe(body);
  });

  it('drops every mark, top level, parts and tools, and leaves the request it was given unchanged', () => {
    const mark = { type: 'ephemeral' };
    const body = {
      model: 'm',
      cache_control: mark,
      messages: [
        {
          role: 'system',
          content: [
            { type: 'text', text: 'a', cache_control: mark },
            { type: 'text', text: 'b' },
          ],
        },
        { role: 'user', content: 'hi' },
      ],
      tools: [{ type: 'function', function: { name: 't' }, cache_control: mark }],
    } as unknown as ChatRequest;
    const before = structuredClone(body);
    expect(withoutCacheMarks(body)).toEqual({
      model: 'm',
      messages: [
        {
          role: 'system',
          content: [
            { type: 'text', text: 'a' },
            { type: 'text', text: 'b' },
          ],
        },
        { role: 'user', content: 'hi' },
      ],
      tools: [{ type: 'function', function: { name: 't' } }],
    });
    expect(body).toEqual(before);
  });
});

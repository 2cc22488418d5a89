import { describe, expect, it } from 'vitest';
import { validateBatchInput } from '../../functions/files/batch-input';
import type { GatewayError } from '../../functions/shared/errors';
import { MAX_BATCH_LINES } from '../../functions/files/types';

const line = (id: string) => JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/chat/completions', body: { model: 'm', messages: [] } });
const check = (text: string) => () => validateBatchInput(new TextEncoder().encode(text));

function refusal(text: string): GatewayError {
  try {
    check(text)();
  } catch (err) {
    return err as GatewayError;
  }
  throw new Error('accepted');
}

describe('batch input files', () => {
  it('accepts CRLF line ends and one trailing newline', () => {
    expect(check(`${line('a')}\r\n${line('b')}\r\n`)).not.toThrow();
    expect(check(`${line('a')}\n${line('b')}`)).not.toThrow();
  });

  it('refuses an empty line inside the file and a file without requests, naming the file', () => {
    expect(refusal(`${line('a')}\n\n${line('b')}\n`)).toMatchObject({ status: 400, param: 'file', message: expect.stringContaining('line 2 is empty') });
    expect(refusal('\n')).toMatchObject({ status: 400, param: 'file', code: 'invalid_batch_input' });
    expect(refusal('[1]\n').message).toContain('line 1 is not a JSON object');
    expect(refusal(`${JSON.stringify({ custom_id: 'a', method: 'POST', url: '/v1/embeddings', body: [] })}\n`).message).toContain(
      'line 1 has no `body` object',
    );
  });

  it(`stops at ${MAX_BATCH_LINES} requests`, () => {
    const lines = Array.from({ length: MAX_BATCH_LINES }, (_, i) => line(`r${i}`));
    expect(check(lines.join('\n'))).not.toThrow();
    expect(refusal([...lines, line('one-more')].join('\n')).message).toContain(`line ${MAX_BATCH_LINES + 1} exceeds the limit of ${MAX_BATCH_LINES} requests`);
  });
});

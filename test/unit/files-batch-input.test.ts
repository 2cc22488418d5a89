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

  it('refuses a file without requests, naming the file', () => {
    expect(refusal('\n')).toMatchObject({ status: 400, param: 'file', code: 'invalid_batch_input' });
    expect(refusal(' \r\n\n')).toMatchObject({ status: 400, param: 'file', code: 'invalid_batch_input' });
  });

  it('leaves what each line says to the batch that runs it (a bad line is an error line there, as at OpenAI)', () => {
    expect(check(`${line('a')}\n\n{not json\n[1]\n${line('a')}\n`)).not.toThrow();
  });

  it(`stops at ${MAX_BATCH_LINES} requests`, () => {
    const lines = Array.from({ length: MAX_BATCH_LINES }, (_, i) => line(`r${i}`));
    expect(check(lines.join('\n'))).not.toThrow();
    expect(refusal([...lines, line('one-more')].join('\n')).message).toContain(`more than ${MAX_BATCH_LINES} requests`);
  });
});

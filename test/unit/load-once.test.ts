import { describe, expect, it } from 'vitest';
import { loadOnce } from '../../functions/shared/load-once';

describe('loadOnce', () => {
  it('loads a module once however many requests ask for it, together or one after another', async () => {
    let loads = 0;
    const load = loadOnce(async () => ({ n: ++loads }));
    const together = await Promise.all([load(), load(), load()]);
    expect(together.map((m) => m.n)).toEqual([1, 1, 1]);
    for (let i = 0; i < 5; i++) expect((await load()).n).toBe(1);
    expect(loads).toBe(1);
  });

  it('does not remember a failed load: the next call tries again', async () => {
    let loads = 0;
    const load = loadOnce(async () => {
      loads++;
      if (loads === 1) throw new Error('chunk missing');
      return { ok: true };
    });
    await expect(load()).rejects.toThrow('chunk missing');
    expect(await load()).toEqual({ ok: true });
    expect(await load()).toEqual({ ok: true });
    expect(loads).toBe(2);
  });
});

/**
 * The malformed-input sweeps' common parts: sending many probes a few at a time, and what
 * makes an answer wrong.
 */

/** Every probe checked, `concurrency` at a time (a few callers at once, as clients are); the problems found. */
export async function sweep<P>(probes: readonly P[], check: (probe: P) => Promise<string | undefined>, concurrency = 8): Promise<string[]> {
  const problems: string[] = [];
  const queue = [...probes];
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let probe = queue.shift(); probe !== undefined; probe = queue.shift()) {
        const problem = await check(probe);
        if (problem) problems.push(problem);
      }
    }),
  );
  return problems;
}

/**
 * What is wrong with an answer to a malformed request, if anything (`what` describes it): a
 * 5xx, a stream that started and then failed inside the gateway, or a 4xx that is not an
 * error object with a message (docs/api.md, "Errors").
 */
export function answerProblem(status: number, text: string, what: string): string | undefined {
  if (status >= 500) return what;
  if (status === 200 && /server_error|internal_error/.test(text)) return `failed in the stream: ${what}`;
  if (status >= 400) {
    try {
      const message = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
      if (typeof message !== 'string' || message === '') return `no error message: ${what}`;
    } catch {
      return `not JSON: ${what}`;
    }
  }
  return undefined;
}

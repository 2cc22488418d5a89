import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// Lambda Managed Instances send SIGTERM before an execution environment shuts down: the
// Lambda entry writes what busy invocations held back (spend counters, EMF values) and
// then lets the process end as the signal would have (functions/shared/http/lambda-entry.ts).

function runUntilSignal(signal: NodeJS.Signals) {
  const child = spawn(process.execPath, ['--import', 'tsx', resolve(import.meta.dirname, '../support/held-writes-process.ts')], {
    env: { ...process.env, POWERTOOLS_LOG_LEVEL: 'ERROR' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    if (out.includes('ready\n') && !child.killed) child.kill(signal);
  });
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise<{ out: string; signal: NodeJS.Signals | null; code: number | null }>((done) =>
    child.once('exit', (code, exitSignal) => done({ out, signal: exitSignal, code })),
  );
}

describe('a shutdown signal to a process serving Lambda invocations', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)(
    '%s: what is held is written, then the process ends by the signal',
    async (signal) => {
      const started = performance.now();
      const { out, signal: endedBy } = await runUntilSignal(signal);
      expect(out).toContain('held values written');
      expect(endedBy).toBe(signal);
      // 300 ms of writing after start-up: the process does not linger past it.
      expect(performance.now() - started).toBeLessThan(30_000);
    },
    60_000,
  );
});

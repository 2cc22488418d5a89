import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeJvmScratch, sweepOrphanedScratch } from '../../infra/local/jvm-scratch';

const root = mkdtempSync(join(tmpdir(), 'jvm-scratch-test-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A pid that has ended (its process reaped). */
function deadPid(): number {
  const { pid } = spawnSync('true');
  return pid!;
}

describe('DynamoDB Local scratch folders', () => {
  it('a folder is made under the root, claimed with the JVM pid and removed', () => {
    const scratch = makeJvmScratch(root);
    expect(scratch.dir.startsWith(join(root, 'dynamodb-local-'))).toBe(true);
    scratch.claim(4242);
    expect(existsSync(join(scratch.dir, 'jvm.pid'))).toBe(true);
    scratch.remove();
    expect(existsSync(scratch.dir)).toBe(false);
  });

  it('a sweep removes the folders whose JVM is gone and keeps those of a running one', async () => {
    // A running process whose command line names DynamoDB Local, as the JVM's does.
    const running = spawn('sh', ['-c', 'sleep 30', 'DynamoDBLocal.jar'], { stdio: 'ignore' });
    try {
      const folder = (name: string, pid?: string) => {
        const dir = join(root, name);
        mkdirSync(dir);
        writeFileSync(join(dir, 'sqlite-392-x-libsqlite4java.so'), 'library');
        if (pid !== undefined) writeFileSync(join(dir, 'jvm.pid'), pid);
        return dir;
      };
      const live = folder('dynamodb-local-live', String(running.pid));
      const dead = folder('dynamodb-local-dead', String(deadPid()));
      const reused = folder('dynamodb-local-reused', String(process.pid)); // the pid now runs something else
      const garbled = folder('dynamodb-local-garbled', 'not a pid');
      const starting = folder('dynamodb-local-starting');
      const abandoned = folder('dynamodb-local-abandoned');
      const old = new Date(Date.now() - 5 * 60_000);
      utimesSync(abandoned, old, old);
      const unrelated = folder('something-else', String(deadPid()));

      const removed = sweepOrphanedScratch(root);

      expect(removed.sort()).toEqual([abandoned, dead, garbled, reused].sort());
      for (const dir of [live, starting, unrelated]) expect(existsSync(dir), dir).toBe(true);
      for (const dir of removed) expect(existsSync(dir), dir).toBe(false);
    } finally {
      running.kill('SIGKILL');
    }
  });

  it('a root that cannot be read sweeps nothing', () => {
    expect(sweepOrphanedScratch(join(root, 'missing'))).toEqual([]);
  });
});

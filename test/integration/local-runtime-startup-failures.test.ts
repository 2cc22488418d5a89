import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';

const scratch = mkdtempSync(join(tmpdir(), 'gateway-startup-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
let folders = 0;
const freshFolder = () => join(scratch, `case-${++folders}`);

/** `npm start` in a child process; `ended` resolves with its exit code and what it printed. */
function launch(env: Record<string, string | undefined>) {
  const child = spawn(process.execPath, ['--import', 'tsx', resolve(import.meta.dirname, '../../infra/local/main.ts')], {
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      GATEWAY_ADMIN_KEY: '',
      GATEWAY_DYNAMODB_ENDPOINT: '',
      GATEWAY_KMS_ENDPOINT: '',
      GATEWAY_TABLE_PREFIX: '',
      POWERTOOLS_LOG_LEVEL: 'ERROR',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const ended = new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => child.once('close', (code) => done({ code, stdout, stderr })));
  return { child, ended };
}

const npmStart = (env: Record<string, string | undefined>) => launch(env).ended;

/** Processes whose command line names the folder: DynamoDB Local runs with `-dbPath <data>/dynamodb`. */
const pidsUsing = (folder: string) => spawnSync('pgrep', ['-f', folder], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean).map(Number);
const processesUsing = (folder: string) => pidsUsing(folder).length;

const meaningfulLines = (text: string) => text.split('\n').filter((line) => line.trim() !== '');

/** One line that names the problem and the fix; no stack trace. */
function expectOneLine(stderr: string, ...mentions: RegExp[]): void {
  const lines = meaningfulLines(stderr);
  expect(lines, stderr).toHaveLength(1);
  expect(stderr).not.toMatch(/^\s+at /m);
  for (const m of mentions) expect(lines[0]).toMatch(m);
}

describe('npm start refuses an unusable environment with one line that says what to do', () => {
  it('without Java on PATH (nor JAVA_HOME): names Java 17 and how to provide it, and starts nothing', async () => {
    const data = freshFolder();
    const emptyPath = mkdtempSync(join(scratch, 'path-'));
    const out = await npmStart({ PATH: emptyPath, JAVA_HOME: undefined, GATEWAY_DATA_DIR: data });
    expect(out.code).not.toBe(0);
    expectOneLine(out.stderr, /Java 17/, /PATH/, /JAVA_HOME/);
    expect(out.stdout).not.toMatch(/running at/);
    // Nothing half-made in the data folder for the next start to trip over.
    expect(existsSync(join(data, 'dynamodb'))).toBe(false);
  });

  it('with the port in use: names the port and the PORT setting, and leaves no DynamoDB Local behind', async () => {
    const data = freshFolder();
    const holder: Server = createServer();
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', () => r()));
    const { port } = holder.address() as { port: number };
    try {
      const out = await npmStart({ PORT: String(port), GATEWAY_DATA_DIR: data });
      expect(out.code).not.toBe(0);
      expectOneLine(out.stderr, new RegExp(`Port ${port}\\b.*in use`), /PORT=/);
      expect(processesUsing(data)).toBe(0);
      expect(existsSync(join(data, 'dynamodb'))).toBe(false);
    } finally {
      await new Promise((r) => holder.close(r));
    }
  });

  it('with a data folder that cannot be written: names the folder and GATEWAY_DATA_DIR, and starts nothing', async () => {
    // Under a regular file: no user (root included) can create it.
    const file = join(scratch, 'a-file');
    writeFileSync(file, '');
    const data = join(file, 'data');
    const out = await npmStart({ GATEWAY_DATA_DIR: data });
    expect(out.code).not.toBe(0);
    expectOneLine(out.stderr, new RegExp(data.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')), /GATEWAY_DATA_DIR=/);
    expect(processesUsing(data)).toBe(0);
  });

  it('stopped (SIGTERM) while DynamoDB Local is starting: stops the JVM before exiting', async () => {
    const data = freshFolder();
    const { child, ended } = launch({ GATEWAY_DATA_DIR: data });
    try {
      // The JVM is running once its command line (with -dbPath under `data`) is listed.
      while (processesUsing(join(data, 'dynamodb')) === 0 && child.exitCode === null) await sleep(50);
      child.kill('SIGTERM');
      const out = await ended;
      expect(out.code).not.toBe(0);
      expectOneLine(out.stderr, /SIGTERM during start-up/);
      expect(out.stdout).not.toMatch(/running at/);
      expect(processesUsing(data)).toBe(0);
    } finally {
      for (const pid of pidsUsing(data)) process.kill(pid, 'SIGKILL'); // what a failing run left
    }
  });
});

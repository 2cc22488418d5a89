import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';

/**
 * A second gateway in its own process (like another Lambda container), sharing this test
 * file's DynamoDB tables. Resolves with its base URL once it is listening.
 */
const MAIN = resolve(import.meta.dirname, '../../infra/local/main.ts');

export interface SpawnedGateway {
  child: ChildProcess;
  url: string;
  adminKey: string;
  /** Everything it printed so far (stdout and stderr). */
  output: () => string;
  /** Resolves with the exit code when the process has exited. */
  exited: Promise<number | null>;
}

/**
 * `npm start` (infra/local/main.ts) as a child process with exactly `env`; resolves once it
 * has printed its URL and admin key, rejects if it exits or stays silent past `startTimeoutMs`.
 * `detached` makes it a process group (node and its DynamoDB Local's JVM can be killed together).
 */
export async function spawnLocalGateway(env: NodeJS.ProcessEnv, options: { detached?: boolean; startTimeoutMs?: number } = {}): Promise<SpawnedGateway> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', MAIN], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  let output = '';
  const url = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway did not start:\n${output}`)), options.startTimeoutMs ?? 60_000);
    const onData = (d: Buffer) => {
      output += d.toString();
      const match = /running at (http:\/\/\S+)\/v1/.exec(output);
      if (match && /Admin key[^:]*: (\S+)/.test(output)) {
        clearTimeout(timer);
        resolveUrl(match[1]!);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited with ${code}:\n${output}`));
    });
  });
  return { child, url, adminKey: /Admin key[^:]*: (\S+)/.exec(output)![1]!, output: () => output, exited };
}

export async function startChildGateway(
  parent: { adminKey: string; kmsEndpoint: string },
  env: Record<string, string> = {},
): Promise<{ url: string; adminKey: string; pid: number; output: () => string; alive: () => boolean; stop: () => Promise<void> }> {
  const { child, url, adminKey, output } = await spawnLocalGateway({
    ...process.env,
    PORT: '0',
    GATEWAY_DATA_DIR: 'memory',
    GATEWAY_ADMIN_KEY: parent.adminKey,
    GATEWAY_KMS_ENDPOINT: parent.kmsEndpoint,
    GATEWAY_DYNAMODB_ENDPOINT: process.env.AWS_ENDPOINT_URL_DYNAMODB!,
    GATEWAY_TABLE_PREFIX: process.env.GATEWAY_TEST_TABLE_PREFIX!,
    GATEWAY_TRUSTED_HOSTS: '127.0.0.1,localhost',
    POWERTOOLS_LOG_LEVEL: 'ERROR',
    GATEWAY_LOAD_HANDLERS: 'on-first-use',
    ...env,
  });
  return {
    url,
    adminKey,
    pid: child.pid!,
    output,
    alive: () => child.exitCode === null && child.signalCode === null,
    stop: () =>
      new Promise<void>((r) => {
        if (child.exitCode !== null) return r();
        child.once('exit', () => r());
        child.kill('SIGTERM');
      }),
  };
}

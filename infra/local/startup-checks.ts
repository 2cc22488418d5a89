import { accessSync, constants, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { delimiter, join } from 'node:path';

/**
 * Something this machine must provide for the local runtime is missing. The message is one
 * line that names the problem and the fix; `npm start` prints it instead of a stack trace.
 */
export class StartupProblem extends Error {
  override name = 'StartupProblem';
}

const JAVA_INSTALL_HINT = 'install Java 17 or later (e.g. `apt install openjdk-17-jre-headless`, `brew install openjdk@17`)';

/**
 * The `java` that DynamoDB Local will run with: the first on PATH (what spawning `java`
 * finds), else `$JAVA_HOME/bin/java`.
 */
export function locateJava(env: NodeJS.ProcessEnv = process.env): string {
  const exe = process.platform === 'win32' ? 'java.exe' : 'java';
  const candidates = [
    ...(env.PATH ?? '')
      .split(delimiter)
      .filter(Boolean)
      .map((dir) => join(dir, exe)),
    ...(env.JAVA_HOME ? [join(env.JAVA_HOME, 'bin', exe)] : []),
  ];
  const found = candidates.find(isExecutable);
  if (found) return found;
  throw new StartupProblem(
    `Java 17+ is needed for DynamoDB Local and was not found on PATH${env.JAVA_HOME ? ` nor in JAVA_HOME=${env.JAVA_HOME}` : ''}: ${JAVA_INSTALL_HINT}, then put its bin folder on PATH or set JAVA_HOME to it.`,
  );
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Why DynamoDB Local's JVM ended during start-up, from what it printed. */
export function javaStartFailure(java: string, stderr: string): StartupProblem {
  if (/UnsupportedClassVersionError|class file version/.test(stderr)) {
    return new StartupProblem(
      `Java 17+ is needed for DynamoDB Local; ${java} is older: ${JAVA_INSTALL_HINT}, then put it first on PATH or set JAVA_HOME to it.`,
    );
  }
  const said = stderr
    .split('\n')
    .map((line) => line.trim())
    .find((line) => line !== '' && !line.startsWith('Picked up JAVA_TOOL_OPTIONS'));
  return new StartupProblem(
    `DynamoDB Local (${java}) exited during start-up${said ? `: ${said}` : ''}. It needs Java 17 or later: check \`${java} -version\`, or set JAVA_HOME to another Java.`,
  );
}

/** The data folder exists (created if need be) and a file can be written in it. */
export function ensureWritableDataDir(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true });
    const probe = join(dir, `.write-check-${process.pid}`);
    writeFileSync(probe, '');
    rmSync(probe);
  } catch (err) {
    throw new StartupProblem(
      `The data folder ${dir} cannot be written (${fileErrorReason(err)}): set GATEWAY_DATA_DIR=<a writable folder>, or GATEWAY_DATA_DIR=memory to keep nothing.`,
    );
  }
}

function fileErrorReason(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  switch (code) {
    case 'ENOTDIR':
    case 'EEXIST':
      return 'a part of that path is a file, not a folder';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EROFS':
      return 'read-only file system';
    case 'ENOSPC':
      return 'no space left on the device';
    default:
      return code ?? (err as Error).message;
  }
}

/** Fails as listening would, without keeping the port. Port 0 (any free port) always passes. */
export async function ensurePortFree(port: number, host: string): Promise<void> {
  if (port === 0) return;
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen(port, host, () => probe.close(() => resolve()));
  }).catch((err: unknown) => {
    throw listenProblem(err, port, host);
  });
}

/** A listen error as the setting to change; other errors unchanged. */
export function listenProblem(err: unknown, port: number, host: string): unknown {
  switch ((err as NodeJS.ErrnoException).code) {
    case 'EADDRINUSE':
      return new StartupProblem(`Port ${port} on ${host} is in use: stop the other process, or set PORT=<a free port> (PORT=0 picks one).`);
    case 'EACCES':
      return new StartupProblem(`Port ${port} needs privileges this user does not have: set PORT=<a port above 1023>.`);
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
      return new StartupProblem(`HOST=${host} is not an address of this machine: set HOST to one of its addresses (default 127.0.0.1).`);
    default:
      return err;
  }
}

/** PORT as a number the HTTP server accepts. */
export function parsePort(value: string | undefined, fallback: number): number {
  if (value === undefined || value.trim() === '') return fallback;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new StartupProblem(`PORT=${value} is not a port number: set PORT to a number from 0 to 65535 (0 picks a free port).`);
  }
  return port;
}

import { ensureConsoleBuilt } from '../console-build';
import { startLocalGateway, type LocalGateway } from './server';
import { stopWithParent } from './lifelines';
import { parsePort, StartupProblem } from './startup-checks';

/**
 * Supervisors (systemd, Docker, pm2, CI runners) wait about 10 s after SIGTERM before they
 * SIGKILL: a stop that takes longer ends here, and the exit kills the JVM (dynamodb.ts).
 */
const SHUTDOWN_DEADLINE_MS = 9_000;

/** `npm start`: the whole gateway on this machine; prints its URL and admin key. */
const starting = new AbortController();
let gateway: LocalGateway | undefined;
let stopping = false;
const shutdown = async (reason: string) => {
  // A terminal's Ctrl-C reaches this process twice under npm (from the terminal, and
  // forwarded by npm): the first one stops, and the deadline bounds the stop.
  if (stopping) return;
  stopping = true;
  setTimeout(() => {
    process.stderr.write(`The local gateway did not stop within ${SHUTDOWN_DEADLINE_MS / 1000} s of ${reason}; ending it.\n`);
    process.exit(1);
  }, SHUTDOWN_DEADLINE_MS).unref();
  // Still starting: abort, so the start-up stops the JVM and emulators it has started.
  if (!gateway) return starting.abort(new StartupProblem(`Stopped by ${reason} during start-up.`));
  await gateway.stop();
  process.exit(0);
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
stopWithParent(() => void shutdown('the end of its parent process (npm)'));

// The console's files (functions/console/dist) are built on the first start and after its sources change.
await ensureConsoleBuilt().catch((err: unknown) => {
  process.stderr.write(`The console could not be built (the API works without it): ${(err as Error)?.message ?? String(err)}\n`);
});

try {
  gateway = await startLocalGateway({ port: parsePort(process.env.PORT, 8787), host: process.env.HOST || '127.0.0.1', signal: starting.signal });
} catch (err) {
  // startLocalGateway has stopped whatever it started. A StartupProblem is the machine's
  // (its message says what to change); anything else is a fault here, and its stack helps.
  process.stderr.write(err instanceof StartupProblem ? `${err.message}\n` : `The local gateway could not start: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
}
if (starting.signal.aborted) {
  // The signal came after the last step of the start-up.
  await gateway.stop();
  process.stderr.write(`${(starting.signal.reason as Error).message}\n`);
  process.exit(1);
}

process.stdout.write(
  `${[
    '',
    `AI gateway running at ${gateway.baseUrl}`,
    `Console: ${gateway.url}/console/ (sign in with the admin key)`,
    `Admin key (x-gateway-api-key): ${gateway.adminKey}`,
    `Workspace: ${gateway.workspaceId}`,
    `Data: ${process.env.GATEWAY_DATA_DIR ?? '.gateway'}`,
    '',
    `Try: curl -s ${gateway.baseUrl}/workspaces -H "x-gateway-api-key: ${gateway.adminKey}"`,
    '',
  ].join('\n')}\n`,
);

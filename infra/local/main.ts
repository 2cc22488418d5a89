import { startLocalGateway, type LocalGateway } from './server';
import { parsePort, StartupProblem } from './startup-checks';

/** `npm start`: the whole gateway on this machine; prints its URL and admin key. */
const starting = new AbortController();
let gateway: LocalGateway | undefined;
let stopping = false;
const shutdown = async (signal: NodeJS.Signals) => {
  if (stopping) return;
  stopping = true;
  // Still starting: abort, so the start-up stops the JVM and emulators it has started.
  if (!gateway) return starting.abort(new StartupProblem(`Stopped by ${signal} during start-up.`));
  await gateway.stop();
  process.exit(0);
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);

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
    `Admin key (x-gateway-api-key): ${gateway.adminKey}`,
    `Workspace: ${gateway.workspaceId}`,
    `Data: ${process.env.GATEWAY_DATA_DIR ?? '.gateway'}`,
    '',
    `Try: curl -s ${gateway.baseUrl}/workspaces -H "x-gateway-api-key: ${gateway.adminKey}"`,
    '',
  ].join('\n')}\n`,
);

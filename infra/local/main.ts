import { startLocalGateway, type LocalGateway } from './server';
import { parsePort, StartupProblem } from './startup-checks';

/** `npm start`: the whole gateway on this machine; prints its URL and admin key. */
let gateway: LocalGateway;
try {
  gateway = await startLocalGateway({ port: parsePort(process.env.PORT, 8787), host: process.env.HOST || '127.0.0.1' });
} catch (err) {
  // startLocalGateway has stopped whatever it started. A StartupProblem is the machine's
  // (its message says what to change); anything else is a fault here, and its stack helps.
  process.stderr.write(err instanceof StartupProblem ? `${err.message}\n` : `The local gateway could not start: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
}

process.stdout.write(
  [
    '',
    `AI gateway running at ${gateway.baseUrl}`,
    `Admin key (x-gateway-api-key): ${gateway.adminKey}`,
    `Workspace: ${gateway.workspaceId}`,
    `Data: ${process.env.GATEWAY_DATA_DIR ?? '.gateway'}`,
    '',
    `Try: curl -s ${gateway.baseUrl}/workspaces -H "x-gateway-api-key: ${gateway.adminKey}"`,
    '',
  ].join('\n') + '\n',
);

let stopping = false;
const shutdown = async () => {
  if (stopping) return;
  stopping = true;
  await gateway.stop();
  process.exit(0);
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);

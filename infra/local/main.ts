import { startLocalGateway } from './server';

/** `npm start`: the whole gateway on this machine; prints its URL and admin key. */
const port = Number(process.env.PORT ?? 8787);
const gateway = await startLocalGateway({ port, host: process.env.HOST ?? '127.0.0.1' });

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

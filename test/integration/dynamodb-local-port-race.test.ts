import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { startDynamoDbLocal } from '../../infra/local/dynamodb';
import { freePort } from '../../infra/local/ports';

/**
 * A port found free can be taken by another process before the JVM binds it (CI once saw
 * DynamoDB Local fail to start that way, with a message blaming the Java version). Here the
 * first port offered is held by another server, as in that race.
 */
const holders: Server[] = [];
const accepted: Socket[] = [];
afterAll(async () => {
  for (const socket of accepted) socket.destroy();
  for (const s of holders) await new Promise((r) => s.close(r));
});

/** A port held by a server that accepts connections and never answers. */
async function heldPort(): Promise<number> {
  const server = createServer((socket) => accepted.push(socket));
  await new Promise<void>((r) => server.listen(0, '0.0.0.0', () => r()));
  holders.push(server);
  return (server.address() as { port: number }).port;
}

describe('DynamoDB Local start-up', () => {
  it('starts on another port when the one it was given is taken before the JVM binds it', { timeout: 120_000 }, async () => {
    const taken = await heldPort();
    const offered: number[] = [];
    const ports = [taken];
    const dynamo = await startDynamoDbLocal(null, undefined, async () => {
      const port = ports.shift() ?? (await freePort());
      offered.push(port);
      return port;
    });
    try {
      expect(offered).toHaveLength(2);
      expect(offered[0]).toBe(taken);
      expect(dynamo.endpoint).toBe(`http://127.0.0.1:${offered[1]}`);
      const res = await fetch(dynamo.endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-amz-json-1.0',
          'x-amz-target': 'DynamoDB_20120810.ListTables',
          authorization: 'AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0',
        },
        body: '{}',
      });
      expect(res.status).toBe(200);
    } finally {
      await dynamo.stop();
    }
  });
});

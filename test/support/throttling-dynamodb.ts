import http from 'node:http';

/**
 * A proxy to DynamoDB that, while `throttling`, answers every write to the request-log table
 * (PutItem, BatchWriteItem) as DynamoDB answers a throttled one: HTTP 400
 * ProvisionedThroughputExceededException. It notes each write to that table it saw.
 */
export function startThrottlingDynamoDb(target: string, isLogTable: (tableName: string) => boolean) {
  const upstream = new URL(target);
  const state = {
    throttling: false,
    writes: [] as Array<{ operation: string; conditional: boolean; throttled: boolean; body: string }>,
  };
  const logTableWrite = (operation: string, body: Record<string, unknown>): boolean => {
    if (operation === 'PutItem') return isLogTable(String(body.TableName));
    if (operation === 'BatchWriteItem') return Object.keys((body.RequestItems as object | undefined) ?? {}).some(isLogTable);
    return false;
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const operation = String(req.headers['x-amz-target'] ?? '').split('.')[1] ?? '';
      let parsed: Record<string, unknown> = {};
      try {
        parsed = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
      } catch {}
      if (logTableWrite(operation, parsed)) {
        state.writes.push({ operation, conditional: typeof parsed.ConditionExpression === 'string', throttled: state.throttling, body: body.toString('utf8') });
        if (state.throttling) {
          res.writeHead(400, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'throttled' });
          res.end(
            JSON.stringify({
              __type: 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException',
              message: 'The level of configured provisioned throughput for the table was exceeded.',
            }),
          );
          return;
        }
      }
      const forwarded = http.request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 500, answer.headers);
        answer.pipe(res);
      });
      forwarded.on('error', () => req.socket.destroy());
      forwarded.end(body);
    });
  });
  return new Promise<{ url: string; state: typeof state; close: () => Promise<void> }>((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      resolve({
        url: `http://127.0.0.1:${port}`,
        state,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}

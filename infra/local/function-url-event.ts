import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { LambdaFunctionURLEvent } from 'aws-lambda';

/**
 * Which front door the local runtime plays: API Gateway REST (v1 proxy events, the default)
 * or a Lambda function URL (payload format 2.0), as `-c frontDoor=function-url` deploys it
 * (GATEWAY_FRONT_DOOR).
 */
export type FrontDoor = 'api-gateway' | 'function-url';

export function frontDoorFrom(value: string | undefined): FrontDoor {
  if (value === undefined || value === '' || value === 'api-gateway') return 'api-gateway';
  if (value === 'function-url') return 'function-url';
  throw new Error(`GATEWAY_FRONT_DOOR must be 'api-gateway' or 'function-url'; got '${value}'.`);
}

/** Content types a function URL hands over as text; every other body arrives base64-encoded. */
const TEXT_BODY = /^(text\/|application\/(json|xml|javascript|x-www-form-urlencoded)|[^;]*\+(json|xml)\b)/i;

/**
 * What a Lambda function URL sends, in the shape its documentation gives (payload format
 * 2.0): header names in lower case with repeated values joined by commas, cookies in their
 * own list, the path and query string as sent, text bodies as text and others in base64.
 */
export function toFunctionUrlEvent(req: IncomingMessage, body: Buffer, rawPath: string): LambdaFunctionURLEvent {
  const target = req.url ?? '/';
  const queryAt = target.indexOf('?');
  const rawQueryString = queryAt < 0 ? '' : target.slice(queryAt + 1).replace(/#.*$/, '');
  const headers: Record<string, string> = {};
  let cookies: string[] | undefined;
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!.toLowerCase();
    const value = req.rawHeaders[i + 1]!;
    if (name === 'cookie') {
      (cookies ??= []).push(...value.split(/;\s*/).filter(Boolean));
      continue;
    }
    headers[name] = headers[name] === undefined ? value : `${headers[name]},${value}`;
  }
  const queryStringParameters: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(rawQueryString)) {
    queryStringParameters[name] = queryStringParameters[name] === undefined ? value : `${queryStringParameters[name]},${value}`;
  }
  const text = body.length > 0 && TEXT_BODY.test(headers['content-type'] ?? '');
  const now = Date.now();
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString,
    ...(cookies ? { cookies } : {}),
    headers,
    ...(rawQueryString ? { queryStringParameters } : {}),
    requestContext: {
      accountId: 'anonymous',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: 'local',
      http: {
        method: req.method ?? 'GET',
        path: rawPath,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: new Date(now).toUTCString(),
      timeEpoch: now,
    },
    ...(body.length > 0 ? { body: body.toString(text ? 'utf8' : 'base64') } : {}),
    isBase64Encoded: body.length > 0 && !text,
  };
}

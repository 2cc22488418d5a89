import './awslambda-shim';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { ENDPOINT_GROUPS, groupForPath } from '../endpoint-groups';
import { TABLE_SPECS } from '../tables';
import { LocalResponseStream, type StreamingHandler } from './awslambda-shim';
import { createTables, startDynamoDbLocal } from './dynamodb';
import { answerClientError, readBody, refuseOversizedBody } from './http-edge';
import { frontDoorFrom, toFunctionUrlEvent, type FrontDoor } from './function-url-event';
import { lambdaContext } from './lambda-context';
import { markRunning } from './crash-marker';
import { startLocalKms } from './kms';
import { startLocalSchedules } from './schedules';
import { createLocalFilesBucket } from './s3';
import { startLocalSqs, type LocalSqs } from './sqs';
import { startLocalStepFunctions, type LocalStepFunctions } from './stepfunctions';
import { ensurePortFree, ensureWritableDataDir, listenProblem, locateJava } from './startup-checks';
import { startWorkerPool } from './worker-pool';
import { loadOnce } from '../../functions/shared/load-once';

export interface LocalGatewayOptions {
  /** 0 picks a free port. Default 8787. */
  port?: number;
  host?: string;
  /** Folder for persistent data, or 'memory'. Default `.gateway`. */
  dataDir?: string;
  /** Bootstrap admin key; generated (and saved under dataDir) when absent. */
  adminKey?: string;
  /** Hosts a custom host may name although they are private (GATEWAY_TRUSTED_HOSTS). */
  trustedHosts?: string[];
  /** Use a running DynamoDB (e.g. another local gateway's) instead of starting one. */
  dynamodbEndpoint?: string;
  /** Use a running local KMS (another local gateway's) so stored credentials decrypt here too. */
  kmsEndpoint?: string;
  /** Prefix of the local table names (tests give each file its own). Default `gateway-`. */
  tablePrefix?: string;
  /** Extra environment for the functions (settings of functions/shared/config.ts). */
  env?: Record<string, string>;
  /**
   * Folder of production bundles, `<dir>/<endpoint group>/index.mjs` (what `npm run bench`
   * builds with the settings of infra/bundling.ts): the endpoint functions run from those,
   * as deployed, instead of from the TypeScript sources (GATEWAY_FUNCTION_BUNDLES).
   */
  functionBundlesDir?: string;
  /**
   * From the sources, an endpoint group's handler is imported at start (default: a
   * type-stripping error shows at once, and no request waits for its module) or, with
   * `on-first-use`, with the group's first request, as bundles are. Tests use the latter: a
   * test file reaches two or three of the groups, and importing all of them cost each file
   * about a second of CPU (GATEWAY_LOAD_HANDLERS).
   */
  loadHandlers?: 'at-start' | 'on-first-use';
  /**
   * Longest local Wait state / retry interval of the state machines, in ms, so polling
   * workflows move along (default GATEWAY_WORKFLOW_MAX_WAIT_MS, else 2000).
   */
  workflowMaxWaitMs?: number;
  /** History events a local execution may have before it fails (default AWS's 25,000; tests lower it). */
  workflowHistoryLimit?: number;
  /**
   * Multi-concurrency mode (GATEWAY_WORKER_THREADS): the endpoint functions run in this many
   * worker threads, each with its own copy of every handler module and many invocations at
   * once, as the Node.js runtime of Lambda Managed Instances runs them. 0 (default): the
   * main thread runs them (one module copy, also many invocations at once).
   */
  workerThreads?: number;
  /**
   * Interval of the scheduled workers (the run reconciler), in ms; they also run once at
   * start-up. Default GATEWAY_RUN_RECONCILE_INTERVAL_MS, else 10000.
   */
  reconcileIntervalMs?: number;
  /**
   * The events the functions get: API Gateway REST proxy events (default) or a Lambda
   * function URL's (payload format 2.0), as `-c frontDoor=function-url` deploys them
   * (GATEWAY_FRONT_DOOR).
   */
  frontDoor?: FrontDoor;
  /** Aborting it during start-up stops what has started and rejects with its reason. */
  signal?: AbortSignal;
}

export interface LocalGateway {
  /** `http://host:port` */
  url: string;
  /** `http://host:port/v1`, what an OpenAI SDK takes as baseURL. */
  baseUrl: string;
  adminKey: string;
  organisationId: string;
  workspaceId: string;
  dynamodbEndpoint: string;
  kmsEndpoint: string;
  /** Local Step Functions (infra/local/stepfunctions/): endpoint, machine ARNs, running(). */
  stepFunctions: LocalStepFunctions;
  /** Local SQS (infra/local/sqs.ts): endpoint and queue URLs. */
  sqs: LocalSqs;
  /** Multi-concurrency mode only: per worker thread, invocations served and the most at once. */
  workerStats?: () => Array<{ served: number; maxInFlight: number }>;
  stop(): Promise<void>;
}

// Node 20 is this project's deliberate floor (docs/dependencies.md); the SDK's notice is known.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/** REQUEST_LOG_BATCH_WAIT_MS of the local runtime unless set (docs/settings.md, bench/README.md). */
export const LOCAL_REQUEST_LOG_BATCH_WAIT_MS = 20;
/**
 * REQUEST_LOG_SHARDS of the local runtime unless set: one machine writes far below one
 * partition's limit, and every log listing reads each shard (AWS's default is 64).
 */
export const LOCAL_REQUEST_LOG_SHARDS = 4;
/** How long `stop()` lets running invocations finish. */
const INVOCATION_DRAIN_MS = 10_000;

let started = false;

function loadOrCreate(file: string | null, make: () => string): string {
  if (file && existsSync(file)) return readFileSync(file, 'utf8').trim();
  const value = make();
  if (file) writeFileSync(file, `${value}\n`, { mode: 0o600 });
  return value;
}

/**
 * Run the whole gateway on this machine: HTTP -> API Gateway REST v1 proxy
 * event -> the same handler modules as Lambda; DynamoDB Local; a local KMS. Functions
 * read their settings from process.env, so one process hosts one gateway.
 */
export async function startLocalGateway(options: LocalGatewayOptions = {}): Promise<LocalGateway> {
  if (started) throw new Error('A local gateway is already running in this process; start another process for a second one.');
  started = true;
  const dataDir = options.dataDir ?? process.env.GATEWAY_DATA_DIR ?? '.gateway';
  const persistent = dataDir !== 'memory';
  const dir = persistent ? resolve(dataDir) : null;
  const port = options.port ?? 8787;
  const host = options.host ?? '127.0.0.1';
  const stops: Array<() => Promise<void>> = [];

  try {
    /** Between steps: an abort stops here, and the catch below stops what has started. */
    const aborted = () => options.signal?.throwIfAborted();
    const loadHandlers = options.loadHandlers ?? loadHandlersFrom(process.env.GATEWAY_LOAD_HANDLERS);
    const sharedEndpoint = (options.dynamodbEndpoint ?? process.env.GATEWAY_DYNAMODB_ENDPOINT) || undefined;
    // What this machine must provide is checked before anything starts: a missing piece then
    // leaves no emulator running and nothing half-made in the data folder.
    await ensurePortFree(port, host);
    if (!sharedEndpoint) locateJava();
    if (dir) {
      ensureWritableDataDir(dir);
      mkdirSync(join(dir, 'dynamodb'), { recursive: true });
    }
    const dynamo = sharedEndpoint
      ? { endpoint: sharedEndpoint, stop: async () => undefined }
      : await startDynamoDbLocal(dir ? join(dir, 'dynamodb') : null, options.signal);
    stops.push(dynamo.stop);

    const sharedKms = (options.kmsEndpoint ?? process.env.GATEWAY_KMS_ENDPOINT) || undefined;
    const kms = sharedKms
      ? { endpoint: sharedKms, stop: async () => undefined }
      : await startLocalKms(
          Buffer.from(
            loadOrCreate(dir && join(dir, 'kms-master.key'), () => randomBytes(32).toString('base64')),
            'base64',
          ),
        );
    stops.push(kms.stop);
    aborted();

    const prefix = options.tablePrefix ?? process.env.GATEWAY_TABLE_PREFIX ?? 'gateway-';
    const tableNames = Object.fromEntries(TABLE_SPECS.map((t) => [t.name, `${prefix}${t.name}`]));
    Object.assign(process.env, {
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      AWS_ENDPOINT_URL_KMS: kms.endpoint,
      GATEWAY_TRUSTED_HOSTS: (options.trustedHosts ?? process.env.GATEWAY_TRUSTED_HOSTS?.split(',') ?? []).join(','),
      POWERTOOLS_METRICS_DISABLED: process.env.POWERTOOLS_METRICS_DISABLED ?? 'true',
      // One process serves every request here, so request-log records of requests that end
      // close together can share a write (Lambda, one request per container, writes at once).
      REQUEST_LOG_BATCH_WAIT_MS: process.env.REQUEST_LOG_BATCH_WAIT_MS ?? String(LOCAL_REQUEST_LOG_BATCH_WAIT_MS),
      REQUEST_LOG_SHARDS: process.env.REQUEST_LOG_SHARDS ?? String(LOCAL_REQUEST_LOG_SHARDS),
      // Records are journaled in the data folder as they are scheduled, so a crash loses none (crash-marker.ts replays them).
      ...(dir ? { REQUEST_LOG_JOURNAL_DIR: join(dir, 'request-log-journal') } : {}),
      ...Object.fromEntries(TABLE_SPECS.map((t) => [t.envVar, tableNames[t.name]!])),
      ...options.env,
    });
    await createTables(dynamo.endpoint, tableNames);
    aborted();

    // Workflows (infra/workflows): state machines and queues, reached through the SDKs'
    // endpoint settings. Queue consumers and the executions a crash left running start
    // once every setting is in process.env and every handler is loaded (below).
    const stepFunctions = await startLocalStepFunctions({
      maxWaitMs: options.workflowMaxWaitMs ?? (Number(process.env.GATEWAY_WORKFLOW_MAX_WAIT_MS) || 2000),
      dataDir: dir ? join(dir, 'stepfunctions') : null,
      deferResume: true,
      ...(options.workflowHistoryLimit ? { historyLimit: options.workflowHistoryLimit } : {}),
    });
    stops.push(stepFunctions.stop);
    // With a data folder the queues are journaled: queued runs survive a crash (sqs-journal.ts);
    // and the files bucket's objects are kept on disk (s3-store.ts).
    const sqs = await startLocalSqs({
      deferConsumers: true,
      journalFile: dir ? join(dir, 'sqs', 'journal.jsonl') : null,
      s3DataDir: dir ? join(dir, 's3') : null,
    });
    stops.push(sqs.stop);
    const s3 = await createLocalFilesBucket(sqs.endpoint);
    aborted();
    Object.assign(process.env, stepFunctions.env, sqs.env, s3, options.env);

    // Handlers are imported only now: their module scope reads the settings above.
    // A stray throw anywhere in this process (server, queues, workflows) is logged, not fatal.
    (await import('../../functions/shared/telemetry/last-resort')).installLastResort();
    const handlers = new Map<string, StreamingHandler>();
    const bundles = (options.functionBundlesDir ?? process.env.GATEWAY_FUNCTION_BUNDLES) || undefined;
    const threads = options.workerThreads ?? (Number(process.env.GATEWAY_WORKER_THREADS) || 0);
    let workerStats: LocalGateway['workerStats'];
    if (threads > 0) {
      // Worker threads copy process.env when they start: every setting above is in place.
      const pool = await startWorkerPool(threads, bundles ? { bundlesDir: bundles } : {});
      stops.push(() => pool.stop(INVOCATION_DRAIN_MS));
      workerStats = pool.stats;
      for (const group of ENDPOINT_GROUPS) handlers.set(group.name, pool.handlerFor(group.name));
    }
    for (const group of threads > 0 ? [] : ENDPOINT_GROUPS) {
      if (bundles) {
        // A bundle is its own module graph (own config and caches), like a Lambda function,
        // and like one it starts on its first invocation: a process that serves chat does
        // not hold the assistants', files' or batches' code (about 40 MB of RSS for eight
        // unused bundles).
        handlers.set(group.name, handlerOnFirstUse(resolve(bundles, group.name, 'index.mjs')));
        continue;
      }
      const source = resolve(import.meta.dirname, '../..', group.entry);
      if (loadHandlers === 'on-first-use') {
        handlers.set(group.name, handlerOnFirstUse(source));
        continue;
      }
      const mod = (await import(source)) as { handler: StreamingHandler };
      handlers.set(group.name, mod.handler);
    }

    aborted();
    const { bootstrap } = await import('../../functions/admin/bootstrap');
    const givenKey = (options.adminKey ?? process.env.GATEWAY_ADMIN_KEY) || undefined;
    const keyFile = dir && join(dir, 'admin-key');
    const savedKey = !givenKey && keyFile && existsSync(keyFile) ? readFileSync(keyFile, 'utf8').trim() : undefined;
    const boot = await bootstrap(givenKey ?? savedKey);
    const adminKey = givenKey ?? savedKey ?? boot.createdSecret!;
    if (keyFile && !givenKey && boot.createdSecret) writeFileSync(keyFile, `${adminKey}\n`, { mode: 0o600 });

    aborted();
    if (dir) {
      // After the workflows' stores and before serving: a previous gateway that died here
      // leaves spend counters to re-derive; this one's marker goes once its writes are done.
      const marker = await markRunning(dir);
      stops.push(async () => marker.clear());
    }
    sqs.startConsumers();
    stepFunctions.resumeSaved();
    // Scheduled workers: the run reconciler's first pass ends the runs a crash left behind.
    const schedules = startLocalSchedules({
      intervalMs: options.reconcileIntervalMs ?? (Number(process.env.GATEWAY_RUN_RECONCILE_INTERVAL_MS) || 10_000),
    });
    stops.push(schedules.stop);

    // The port was free before the emulators started; another process may have taken it since.
    const frontDoor = options.frontDoor ?? frontDoorFrom(process.env.GATEWAY_FRONT_DOOR);
    const { server, url, idle } = await listen((group) => handlers.get(group)!, port, host, frontDoor).catch((err: unknown) => {
      throw listenProblem(err, port, host);
    });
    stops.push(async () => {
      await closeServer(server);
      // Invocations still finishing their after-response work (request logs) complete
      // before the stores they write to stop.
      await idle(INVOCATION_DRAIN_MS);
    });
    return {
      url,
      baseUrl: `${url}/v1`,
      adminKey,
      organisationId: boot.organisationId,
      workspaceId: boot.workspace.id,
      dynamodbEndpoint: dynamo.endpoint,
      kmsEndpoint: kms.endpoint,
      stepFunctions,
      sqs,
      ...(workerStats ? { workerStats } : {}),
      stop: async () => {
        for (const stop of stops.reverse()) await stop().catch(() => undefined);
        started = false;
      },
    };
  } catch (err) {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    started = false;
    throw err;
  }
}

/** An HTTP server that hands each request, as a REST v1 proxy event or a function URL's event, to a streaming handler. */
export async function listen(
  /** The handler of an endpoint group (infra/endpoint-groups.ts). */
  handlerFor: (group: string) => StreamingHandler,
  port = 0,
  host = '127.0.0.1',
  frontDoor: FrontDoor = 'api-gateway',
): Promise<{ server: Server; url: string; idle: (timeoutMs: number) => Promise<void> }> {
  const invocations = new Set<Promise<void>>();
  const server = createServer((req, res) => {
    const invocation = serve(handlerFor, req, res, frontDoor);
    invocations.add(invocation);
    void invocation.finally(() => invocations.delete(invocation));
  });
  server.keepAliveTimeout = 65_000;
  server.on('clientError', answerClientError);
  await new Promise<void>((r, j) => {
    server.once('error', j);
    server.listen(port, host, () => r());
  });
  const address = server.address() as { port: number };
  /** Resolves once every invocation has ended (or after `timeoutMs`). */
  const idle = async (timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while (invocations.size > 0 && Date.now() < deadline) {
      await Promise.race([Promise.allSettled([...invocations]), sleep(deadline - Date.now(), undefined, { ref: false })]);
    }
  };
  return { server, url: `http://${host}:${address.port}`, idle };
}

export function closeServer(server: Server): Promise<void> {
  return new Promise((r) => {
    server.close(() => r());
    server.closeAllConnections();
  });
}

/** API Gateway decodes the path; a malformed escape is passed through as sent. */
function safeDecode(path: string): string {
  if (!path.includes('%')) return path;
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/**
 * The path as the caller sent it: `new URL` would resolve `.` and `..` segments (and their
 * `%2e` forms) before the gateway could see and refuse them.
 */
function requestPath(target: string, url: URL): string {
  if (!target.startsWith('/')) return url.pathname;
  const end = target.search(/[?#]/);
  return end < 0 ? target : target.slice(0, end);
}

/** What API Gateway sends: REST v1 proxy event, binary media types `*\/*` (bodies base64). */
/** A request target that is a path alone (no query, fragment or absolute form). */
const PLAIN_PATH = /^\/[^?#]*$/;

/** GATEWAY_LOAD_HANDLERS: when the endpoint groups' code is imported from the sources (unset: at start). */
export function loadHandlersFrom(value: string | undefined): NonNullable<LocalGatewayOptions['loadHandlers']> {
  if (value === undefined || value === '' || value === 'at-start') return 'at-start';
  if (value === 'on-first-use') return 'on-first-use';
  throw new Error(`GATEWAY_LOAD_HANDLERS must be 'at-start' or 'on-first-use'; got '${value}'.`);
}

/** A module's handler (a function bundle's, or a group's entry in the sources), imported with its first invocation. */
function handlerOnFirstUse(file: string): StreamingHandler {
  const load = loadOnce(() => import(file) as Promise<{ handler: StreamingHandler }>);
  return async (event, stream, context) => (await load()).handler(event, stream, context);
}

export function toProxyEvent(req: IncomingMessage, body: Buffer): APIGatewayProxyEvent {
  const target = req.url ?? '/';
  // Most requests are a plain path: no URL to parse.
  const url = PLAIN_PATH.test(target) ? undefined : new URL(target, 'http://local');
  const rawPath = url ? requestPath(target, url) : target;
  const headers: Record<string, string> = {};
  const multiValueHeaders: Record<string, string[]> = {};
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!;
    const value = req.rawHeaders[i + 1]!;
    headers[name] = value;
    (multiValueHeaders[name] ??= []).push(value);
  }
  const query: Record<string, string> = {};
  const multiQuery: Record<string, string[]> = {};
  for (const [k, v] of url?.searchParams ?? []) {
    query[k] = v;
    (multiQuery[k] ??= []).push(v);
  }
  const hasQuery = Object.keys(query).length > 0;
  return {
    resource: '/{proxy+}',
    path: safeDecode(rawPath),
    httpMethod: req.method ?? 'GET',
    headers,
    multiValueHeaders,
    queryStringParameters: hasQuery ? query : null,
    multiValueQueryStringParameters: hasQuery ? multiQuery : null,
    pathParameters: { proxy: rawPath.startsWith('/') ? rawPath.slice(1) : rawPath },
    stageVariables: null,
    body: body.length ? body.toString('base64') : null,
    isBase64Encoded: body.length > 0,
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      authorizer: null,
      protocol: `HTTP/${req.httpVersion}`,
      httpMethod: req.method ?? 'GET',
      identity: { sourceIp: req.socket.remoteAddress ?? '127.0.0.1' } as APIGatewayProxyEvent['requestContext']['identity'],
      path: rawPath,
      stage: 'local',
      requestId: randomUUID(),
      requestTimeEpoch: Date.now(),
      resourceId: 'local',
      resourcePath: '/{proxy+}',
    },
  };
}

const groupContext = (group: string) =>
  lambdaContext({ functionName: `gateway-${group}`, timeoutSeconds: 900, memoryMb: 1024, region: 'us-east-1', accountId: '000000000000' });

async function serve(handlerFor: (group: string) => StreamingHandler, req: IncomingMessage, res: ServerResponse, frontDoor: FrontDoor): Promise<void> {
  try {
    await serveOne(handlerFor, req, res, frontDoor);
  } catch {
    if (!res.headersSent) {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'Local runtime failure.', type: 'server_error', param: null, code: null } }));
    } else res.destroy();
  }
}

async function serveOne(handlerFor: (group: string) => StreamingHandler, req: IncomingMessage, res: ServerResponse, frontDoor: FrontDoor): Promise<void> {
  const body = await readBody(req).catch(() => Buffer.alloc(0));
  if (body === 'too_large') {
    await refuseOversizedBody(req, res);
    return;
  }
  let event: unknown;
  let path: string;
  if (frontDoor === 'function-url') {
    const rawPath = requestPath(req.url ?? '/', new URL(req.url ?? '/', 'http://local'));
    event = toFunctionUrlEvent(req, body, rawPath);
    path = safeDecode(rawPath);
  } else {
    const proxyEvent = toProxyEvent(req, body);
    event = proxyEvent;
    path = proxyEvent.path;
  }
  const group = groupForPath(path);
  const stream = new LocalResponseStream(res);
  try {
    await handlerFor(group)(event, stream, groupContext(group));
  } catch {
    // The handler already answered; a failure here is a caller that went away mid-stream.
    if (!res.headersSent) {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'Local runtime failure.', type: 'server_error', param: null, code: null } }));
    } else res.destroy();
  }
}

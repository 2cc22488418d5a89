import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { GatewayError, notFound } from '../shared/errors';
import type { GatewayRequest, HttpResponse, Route } from '../shared/http/types';

/**
 * The console's files (the single-page app Vite builds into `functions/console/dist`, see
 * infra/console-build.ts), served at `/console/` by the admin function. Public: the app
 * holds no secret, and everything it shows comes from the documented API, which checks the
 * caller's key or session on every call.
 */

/**
 * Where the built files are: GATEWAY_CONSOLE_DIR if set; in Lambda, the bundle's copy
 * (`<task root>/console`, infra/bundling.ts); else the build beside this module.
 */
const consoleDir = () =>
  process.env.GATEWAY_CONSOLE_DIR || (process.env.LAMBDA_TASK_ROOT ? join(process.env.LAMBDA_TASK_ROOT, 'console') : resolve(import.meta.dirname, 'dist'));

/**
 * Scripts, styles and fonts only from this origin; no inline script or style element, no
 * plugin, no framing; API calls to this origin only. Style attributes set from script
 * (charts) are CSSOM, which `style-src 'self'` allows.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
};

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
};

interface ConsoleFile {
  body: Buffer;
  gzipped: Buffer;
  contentType: string;
  cacheControl: string;
}

/** Vite names the files under assets/ by their content's hash: they never change. */
const HASHED_ASSET = /^assets\//;

function listFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? listFiles(path) : [path];
  });
}

/** The served files by path, read once per container: only these names exist, so no path can reach elsewhere. */
let files: Map<string, ConsoleFile> | undefined;

function loadFiles(): Map<string, ConsoleFile> {
  if (files) return files;
  const dir = consoleDir();
  const loaded = new Map<string, ConsoleFile>();
  let names: string[];
  try {
    names = listFiles(dir);
  } catch {
    throw new GatewayError(
      503,
      'server_error',
      'The console is not built here: run `npm run build` (npm start and npm test build it when missing).',
      null,
      'console_not_built',
    );
  }
  for (const path of names) {
    const name = relative(dir, path).split('\\').join('/');
    const contentType = CONTENT_TYPES[extname(name)];
    if (!contentType || name.startsWith('.')) continue;
    const body = readFileSync(path);
    loaded.set(name, {
      body,
      gzipped: gzipSync(body),
      contentType,
      cacheControl: HASHED_ASSET.test(name) ? 'public, max-age=31536000, immutable' : 'no-cache',
    });
  }
  files = loaded;
  return loaded;
}

function fileResponse(req: GatewayRequest, file: ConsoleFile): HttpResponse {
  const gzip = /\bgzip\b/.test(req.headers['accept-encoding'] ?? '');
  return {
    statusCode: 200,
    headers: {
      'content-type': file.contentType,
      'cache-control': file.cacheControl,
      vary: 'accept-encoding',
      ...(gzip ? { 'content-encoding': 'gzip' } : {}),
      ...SECURITY_HEADERS,
    },
    body: gzip ? file.gzipped : file.body,
  };
}

/** `/console` -> `/console/` (relative, so it holds under an API Gateway stage path); `/console/` -> the app. */
async function consoleIndex(req: GatewayRequest): Promise<HttpResponse> {
  if (!req.path.endsWith('/')) return { statusCode: 308, headers: { location: 'console/', 'cache-control': 'no-cache' } };
  const index = loadFiles().get('index.html');
  if (!index) throw notFound('The console build has no index.html: run `npm run build`.');
  return fileResponse(req, index);
}

async function consoleFile(req: GatewayRequest): Promise<HttpResponse> {
  const file = loadFiles().get(req.params.proxy ?? '');
  if (!file) throw notFound(`No console file '${(req.params.proxy ?? '').slice(0, 128)}'.`);
  return fileResponse(req, file);
}

/** Not API operations (absent from docs/openapi.json): the app's files. */
export const consoleRoutes: Route[] = [
  { method: 'GET', path: '/console', access: 'public', name: 'console.index', handler: consoleIndex },
  { method: 'GET', path: '/console/{proxy+}', access: 'public', name: 'console.file', handler: consoleFile },
];

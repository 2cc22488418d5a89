import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';

/**
 * Builds the console (functions/console/app, Preact + uPlot) with Vite into
 * functions/console/dist: `npm run build`, and on demand by `npm start` and the tests when
 * the output is missing or was built from other sources. The whole app must stay under
 * CONSOLE_BUDGET_BYTES gzipped: a build above it fails.
 */

export const REPO_ROOT = resolve(import.meta.dirname, '..');
export const CONSOLE_APP_DIR = resolve(REPO_ROOT, 'functions/console/app');
export const CONSOLE_DIST_DIR = resolve(REPO_ROOT, 'functions/console/dist');
export const CONSOLE_BUDGET_BYTES = 200 * 1024;
const STAMP = '.build.json';

export interface ConsoleBuild {
  sourceHash: string;
  /** Gzipped size of every file served, summed. */
  gzipBytes: number;
  files: Record<string, number>;
}

function listFiles(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? listFiles(path) : [path];
    });
}

/** What the output depends on: the app's sources, this script, and the versions of the libraries it bundles. */
export function consoleSourceHash(): string {
  const hash = createHash('sha256');
  for (const path of [...listFiles(CONSOLE_APP_DIR), resolve(import.meta.filename)]) {
    hash.update(relative(REPO_ROOT, path)).update('\0').update(readFileSync(path)).update('\0');
  }
  for (const pkg of ['preact', 'uplot', 'vite']) {
    hash.update(JSON.parse(readFileSync(resolve(REPO_ROOT, 'node_modules', pkg, 'package.json'), 'utf8')).version);
  }
  return hash.digest('hex');
}

export function readConsoleBuild(): ConsoleBuild | undefined {
  const stamp = join(CONSOLE_DIST_DIR, STAMP);
  if (!existsSync(stamp)) return undefined;
  return JSON.parse(readFileSync(stamp, 'utf8')) as ConsoleBuild;
}

export async function buildConsole(): Promise<ConsoleBuild> {
  const { build } = await import('vite');
  await build({
    configFile: false,
    root: CONSOLE_APP_DIR,
    // Relative URLs: the app works under any path prefix (an API Gateway stage, /prod/console/).
    base: './',
    logLevel: 'warn',
    oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
    build: {
      outDir: CONSOLE_DIST_DIR,
      emptyOutDir: true,
      assetsDir: 'assets',
      target: 'es2022',
      // No inline scripts: the Content-Security-Policy (functions/console/serve.ts) allows none.
      modulePreload: { polyfill: false },
      assetsInlineLimit: 0,
      reportCompressedSize: false,
      sourcemap: false,
    },
  });
  const files: Record<string, number> = {};
  let gzipBytes = 0;
  for (const path of listFiles(CONSOLE_DIST_DIR)) {
    const size = gzipSync(readFileSync(path)).length;
    files[relative(CONSOLE_DIST_DIR, path)] = size;
    gzipBytes += size;
  }
  if (gzipBytes > CONSOLE_BUDGET_BYTES) {
    throw new Error(`The console is ${gzipBytes} bytes gzipped, over its budget of ${CONSOLE_BUDGET_BYTES}: ${JSON.stringify(files)}`);
  }
  const result: ConsoleBuild = { sourceHash: consoleSourceHash(), gzipBytes, files };
  writeFileSync(join(CONSOLE_DIST_DIR, STAMP), `${JSON.stringify(result, null, 2)}\n`);
  return result;
}

/** Builds the console unless its output is there and was built from the current sources. */
export async function ensureConsoleBuilt(): Promise<ConsoleBuild> {
  const built = readConsoleBuild();
  if (built && built.sourceHash === consoleSourceHash() && existsSync(join(CONSOLE_DIST_DIR, 'index.html'))) return built;
  return buildConsole();
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const result = await buildConsole();
  process.stdout.write(
    `Console built into ${relative(REPO_ROOT, CONSOLE_DIST_DIR)}: ${(result.gzipBytes / 1024).toFixed(1)} KB gzipped (budget ${CONSOLE_BUDGET_BYTES / 1024} KB)\n`,
  );
}

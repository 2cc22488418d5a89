import { cpSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { AssetHashType, DockerImage } from 'aws-cdk-lib';
import { Code } from 'aws-cdk-lib/aws-lambda';
import { buildSync, type BuildOptions, type Metafile } from 'esbuild';

/**
 * The production esbuild settings of every function bundle, in ONE place: the CDK stacks
 * bundle each Lambda with `functionCode` and the benchmarks and bundle tests build the
 * same output with `esbuildOptionsFor`, so the sizes and cold starts they report are those
 * of what is deployed.
 *
 * ESM with code splitting: a module the handler loads with `import()` only when a request
 * needs it (the guardrail evaluator, SDK parts loaded on demand) becomes a chunk of its
 * own, so the Lambda parses only `index.mjs` and its static imports at cold start.
 * NodejsFunction cannot split (it builds to a single `--outfile`), hence a plain asset with
 * local esbuild bundling.
 */

export const REPO_ROOT = resolve(import.meta.dirname, '..');

/**
 * ESM bundles load CommonJS dependencies through esbuild's `__require` shim, which needs a
 * real `require` in scope; the banner provides one (in every chunk). The import alias is
 * long on purpose so it cannot collide with minified identifiers.
 */
export const ESM_REQUIRE_BANNER =
  "import { createRequire as __gatewayCreateRequire } from 'node:module'; const require = __gatewayCreateRequire(import.meta.url);";

/** Node version the bundles target (the Lambda runtime is nodejs22.x). */
export const BUNDLE_TARGET = 'node22';

/** The file Lambda loads: `index.handler`. */
export const BUNDLE_ENTRY_FILE = 'index.mjs';
export const LAMBDA_HANDLER = 'index.handler';

/**
 * `@smithy/eventstream-codec` re-exports the whole of `@smithy/core/event-streams` (stream
 * marshallers and serdes the gateway never uses), and esbuild keeps them in the gateway's
 * cold start (bench/README.md). The codec class alone is all the Bedrock stream decoder needs.
 */
const EVENT_STREAM_CODEC_ONLY = {
  '@smithy/eventstream-codec': resolve(
    dirname(createRequire(import.meta.url).resolve('@smithy/core/package.json')),
    'dist-es/submodules/event-streams/eventstream-codec/EventStreamCodec.js',
  ),
};

/** esbuild options that build the function whose handler module is `entry` into `outdir`. */
export function esbuildOptionsFor(entry: string, outdir: string): BuildOptions {
  return {
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    target: BUNDLE_TARGET,
    format: 'esm',
    splitting: true,
    outdir,
    entryNames: 'index',
    chunkNames: 'chunks/[name]-[hash]',
    outExtension: { '.js': '.mjs' },
    minify: true,
    // Linked .map files without the sources: stack traces point at the TypeScript files
    // (NODE_OPTIONS=--enable-source-maps) and the asset stays small.
    sourcemap: true,
    sourcesContent: false,
    banner: { js: ESM_REQUIRE_BANNER },
    mainFields: ['module', 'main'],
    // The AWS SDK parts a function uses are bundled, not taken from the runtime: a pinned
    // version and faster cold starts (docs/dependencies.md).
    external: [],
    alias: EVENT_STREAM_CODEC_ONLY,
    logLevel: 'warning',
  };
}

/**
 * Files a function serves besides its code, copied into its bundle: the admin function
 * serves the console, built by `npm run build` (cdk.json runs it before every synth) into
 * functions/console/dist, at `<bundle>/console` (functions/console/serve.ts reads it there).
 */
export const BUNDLED_FILES: Readonly<Record<string, { from: string; to: string }>> = {
  'functions/admin/handler.ts': { from: 'functions/console/dist', to: 'console' },
};

function copyBundledFiles(entry: string, outputDir: string): void {
  const files = BUNDLED_FILES[entry];
  if (!files) return;
  const from = resolve(REPO_ROOT, files.from);
  if (!existsSync(join(from, 'index.html'))) throw new Error(`${files.from} is missing: run \`npm run build\` before synth.`);
  cpSync(from, join(outputDir, files.to), { recursive: true, filter: (path) => !path.endsWith('.build.json') });
}

/**
 * The Lambda code of one function: bundled at synth by esbuild in-process (no Docker; the
 * image is only CDK's required fallback and is never pulled). The asset hash is that of the
 * output, so an unchanged bundle is not uploaded again. With bundling skipped (tests,
 * `aws:cdk:bundling-stacks`), CDK neither builds nor fingerprints the repository.
 */
export function functionCode(entry: string): Code {
  return Code.fromAsset(REPO_ROOT, {
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      image: DockerImage.fromRegistry('public.ecr.aws/sam/build-nodejs22.x'),
      // CDK caches staged assets by source path and bundling options, and `local` does not
      // take part: without the entry here every function would get the first one's bundle.
      environment: { FUNCTION_ENTRY: entry },
      local: {
        tryBundle(outputDir: string): boolean {
          buildSync(esbuildOptionsFor(resolve(REPO_ROOT, entry), outputDir));
          copyBundledFiles(entry, outputDir);
          return true;
        },
      },
    },
  });
}

/**
 * The output files a function loads at cold start: its entry file and, transitively, the
 * chunks it imports statically. With `onDemand`, also the chunks its code can `import()`
 * later: everything the function can ever run (esbuild may emit chunks that nothing
 * reachable imports any more). Paths as esbuild's metafile names them.
 */
export function loadedFiles(metafile: Metafile, entryOutput: string, { onDemand = false } = {}): string[] {
  const loaded = new Set<string>();
  const visit = (path: string) => {
    if (loaded.has(path) || !metafile.outputs[path]) return;
    loaded.add(path);
    for (const imported of metafile.outputs[path]!.imports) {
      if (imported.external) continue;
      if (imported.kind === 'import-statement' || (onDemand && imported.kind === 'dynamic-import')) visit(imported.path);
    }
  };
  visit(entryOutput);
  return [...loaded];
}

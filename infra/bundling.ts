import type { BuildOptions } from 'esbuild';
import { OutputFormat, SourceMapMode, type BundlingOptions } from 'aws-cdk-lib/aws-lambda-nodejs';

/**
 * The production esbuild settings of every function bundle, in ONE place: the CDK stack
 * hands `PRODUCTION_BUNDLING` to NodejsFunction, and the benchmarks (bench/cold-start.ts)
 * build the same bundles from it with `esbuildOptionsFor`, so the sizes and cold starts
 * they report are those of what is deployed.
 */

/**
 * ESM bundles load CommonJS dependencies through esbuild's `__require` shim, which needs a
 * real `require` in scope; the banner provides one. The import alias is long on purpose so
 * it cannot collide with minified identifiers.
 */
export const ESM_REQUIRE_BANNER =
  "import { createRequire as __gatewayCreateRequire } from 'node:module'; const require = __gatewayCreateRequire(import.meta.url);";

/** Node version the bundles target (the Lambda runtime is nodejs22.x). */
export const BUNDLE_TARGET = 'node22';

export const PRODUCTION_BUNDLING = {
  format: OutputFormat.ESM,
  target: BUNDLE_TARGET,
  mainFields: ['module', 'main'],
  minify: true,
  sourceMap: true,
  sourceMapMode: SourceMapMode.DEFAULT,
  sourcesContent: false,
  banner: ESM_REQUIRE_BANNER,
  // Bundle the AWS SDK instead of loading the runtime's copy: faster cold starts and a
  // pinned SDK version (aws-stack-notes §6).
  bundleAwsSDK: true,
  externalModules: [] as string[],
} satisfies BundlingOptions;

/**
 * The esbuild build options equivalent to the command NodejsFunction runs for
 * `PRODUCTION_BUNDLING` (aws-cdk-lib/aws-lambda-nodejs `buildEsbuildArgs`: `--bundle
 * --platform=node --target --format --outfile --minify --sourcemap --sources-content=false
 * --banner:js --main-fields`, no externals). NodejsFunction names an ESM output `index.mjs`.
 */
export function esbuildOptionsFor(entry: string, outfile: string): BuildOptions {
  const b = PRODUCTION_BUNDLING;
  return {
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    target: b.target,
    format: b.format === OutputFormat.ESM ? 'esm' : 'cjs',
    outfile,
    minify: b.minify,
    // SourceMapMode.DEFAULT is esbuild's plain `--sourcemap` (a linked .map file).
    sourcemap: b.sourceMap ? (b.sourceMapMode === SourceMapMode.DEFAULT ? true : (b.sourceMapMode as 'inline' | 'external' | 'both')) : false,
    sourcesContent: b.sourcesContent,
    banner: { js: b.banner },
    mainFields: [...b.mainFields],
    external: [...b.externalModules],
    logLevel: 'warning',
  };
}

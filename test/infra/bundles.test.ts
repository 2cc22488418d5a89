import { createHash } from 'node:crypto';
import { builtinModules } from 'node:module';
import { resolve } from 'node:path';
import { build, type BuildResult, type OutputFile } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { ESM_REQUIRE_BANNER, esbuildOptionsFor } from '../../infra/bundling';
import { ENDPOINT_GROUPS } from '../../infra/endpoint-groups';
import { BOOTSTRAP_WORKER } from '../../infra/stacks/bootstrap-stack';
import { REPO_ROOT } from '../../infra/stacks/endpoint-function';
import { WORKERS } from '../../infra/workflows/registry';

// Every function the stacks deploy, bundled with the production esbuild settings
// (infra/bundling.ts, the options NodejsFunction runs): endpoint groups, workflow workers and
// the bootstrap custom resource. Sizes are printed, not benchmarked.
//
// One esbuild call with one entry point per function and no code splitting: each output is
// a standalone bundle, byte for byte what a build of that entry alone gives (checked below
// for one function), while shared modules are parsed once (about 5 s instead of 25 s).

/** Upper bound for one minified bundle (its AWS SDK clients are inside). */
const MAX_BUNDLE_BYTES = 3 * 1024 * 1024;
const OUT_DIR = resolve(REPO_ROOT, 'cdk.out', 'bundle-size-test');

const FUNCTIONS = [
  ...ENDPOINT_GROUPS.map((g) => ({ name: g.name, entry: g.entry })),
  ...WORKERS.map((w) => ({ name: w.name, entry: w.entry })),
  { name: BOOTSTRAP_WORKER.name, entry: BOOTSTRAP_WORKER.entry },
];

interface Bundle {
  name: string;
  entry: string;
  js: OutputFile;
  map: OutputFile | undefined;
  externalImports: string[];
}

const bundles = new Map<string, Bundle>();
const sha = (f: OutputFile | undefined) => (f ? createHash('sha256').update(f.contents).digest('hex') : 'none');

beforeAll(async () => {
  // NodejsFunction names an ESM bundle index.mjs; nothing is written to disk.
  const { entryPoints: _entry, outfile: _outfile, ...production } = esbuildOptionsFor('unused', resolve(OUT_DIR, 'index.mjs'));
  const result: BuildResult<{ write: false; metafile: true }> = await build({
    ...production,
    entryPoints: FUNCTIONS.map((f) => ({ in: resolve(REPO_ROOT, f.entry), out: `${f.name}/index` })),
    outdir: OUT_DIR,
    outExtension: { '.js': '.mjs' },
    write: false,
    metafile: true,
  });
  for (const fn of FUNCTIONS) {
    const jsPath = resolve(OUT_DIR, fn.name, 'index.mjs');
    const js = result.outputFiles.find((f) => f.path === jsPath);
    if (!js) throw new Error(`no bundle for ${fn.name}`);
    const meta = Object.entries(result.metafile.outputs).find(([path]) => resolve(REPO_ROOT, path) === jsPath)?.[1];
    const externalImports = (meta?.imports ?? []).filter((i) => i.external).map((i) => i.path);
    bundles.set(fn.name, { ...fn, js, map: result.outputFiles.find((f) => f.path === `${jsPath}.map`), externalImports });
  }
  const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;
  console.log(
    [
      'Function bundles (production esbuild settings: minified ESM, node22, AWS SDK bundled):',
      `${'function'.padEnd(20)} ${'bundle'.padStart(10)} ${'source map'.padStart(12)}   entry`,
      ...[...bundles.values()].map((b) => `${b.name.padEnd(20)} ${kb(b.js.contents.byteLength).padStart(10)} ${kb(b.map?.contents.byteLength ?? 0).padStart(12)}   ${b.entry}`),
    ].join('\n'),
  );
}, 120_000);

describe('function bundles (production esbuild settings)', () => {
  it('bundles every deployed function, each with its source map', () => {
    expect([...bundles.keys()].sort()).toEqual(FUNCTIONS.map((f) => f.name).sort());
    expect(new Set(FUNCTIONS.map((f) => f.name)).size).toBe(FUNCTIONS.length);
    for (const b of bundles.values()) expect(b.map, b.name).toBeDefined();
  });

  it('builds the same bytes as a build of one function alone', async () => {
    const fn = FUNCTIONS.find((f) => f.name === BOOTSTRAP_WORKER.name)!;
    const outfile = resolve(OUT_DIR, fn.name, 'index.mjs');
    const alone = await build({ ...esbuildOptionsFor(resolve(REPO_ROOT, fn.entry), outfile), write: false });
    const b = bundles.get(fn.name)!;
    expect(sha(alone.outputFiles.find((f) => f.path === outfile))).toBe(sha(b.js));
    expect(sha(alone.outputFiles.find((f) => f.path === `${outfile}.map`))).toBe(sha(b.map));
  });

  it.each(FUNCTIONS.map((f) => f.name))('%s stays under 3 MB', (name) => {
    const bytes = bundles.get(name)!.js.contents.byteLength;
    expect(bytes).toBeGreaterThan(1024);
    expect(bytes, `${name}: ${bytes} bytes`).toBeLessThan(MAX_BUNDLE_BYTES);
  });

  it.each(FUNCTIONS.map((f) => f.name))('%s carries its AWS SDK instead of importing the runtime copy', (name) => {
    const b = bundles.get(name)!;
    // esbuild's metafile lists every import left in the output (static, dynamic, require):
    // only Node built-ins, never an SDK package (message strings that name one do not count).
    expect(b.externalImports.filter((p) => p.startsWith('@aws-sdk/') || p.startsWith('@smithy/'))).toEqual([]);
    for (const path of new Set(b.externalImports)) expect(builtinModules.includes(path.replace(/^node:/, '')), `${name} imports ${path}`).toBe(true);
    // ESM with the createRequire banner, as NodejsFunction builds it.
    expect(b.js.text.startsWith(ESM_REQUIRE_BANNER), name).toBe(true);
  });
});

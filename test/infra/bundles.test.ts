import { builtinModules } from 'node:module';
import { relative, resolve } from 'node:path';
import { build, type Metafile, type OutputFile } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { BUNDLE_ENTRY_FILE, loadedFiles, ESM_REQUIRE_BANNER, esbuildOptionsFor, REPO_ROOT } from '../../infra/bundling';
import { ENDPOINT_GROUPS } from '../../infra/endpoint-groups';
import { BOOTSTRAP_WORKER } from '../../infra/stacks/bootstrap-stack';
import { WORKERS } from '../../infra/workflows/registry';

// Every function the stacks deploy, built with the production esbuild settings
// (infra/bundling.ts, what `functionCode` runs at synth): endpoint groups, workflow workers
// and the bootstrap custom resource, each on its own (chunks are per function). Nothing is
// written to disk. Sizes are printed, not benchmarked.

/** Upper bound for everything one function ships (its AWS SDK parts are inside). */
const MAX_FUNCTION_BYTES = 3 * 1024 * 1024;
/**
 * The gateway also ships the byte-pair ranks of the OpenAI tokenizer (o200k_base and
 * cl100k_base, docs/token-counting.md): data, loaded by the first local token count, never
 * at cold start. They have a cap of their own, outside the one above.
 */
const TOKENIZER_RANKS = 'node_modules/gpt-tokenizer/esm/bpeRanks/';
const MAX_TOKENIZER_RANKS_BYTES = 4 * 1024 * 1024;
/** Issue «Benchmarks»: what the gateway loads at cold start stays within 250 KB minified. */
const GATEWAY_COLD_START_BUDGET = 250 * 1024;
const OUT_ROOT = resolve(REPO_ROOT, 'cdk.out', 'bundle-size-test');

const FUNCTIONS = [
  ...ENDPOINT_GROUPS.map((g) => ({ name: g.name, entry: g.entry })),
  ...WORKERS.map((w) => ({ name: w.name, entry: w.entry })),
  { name: BOOTSTRAP_WORKER.name, entry: BOOTSTRAP_WORKER.entry },
];

interface Bundle {
  name: string;
  files: OutputFile[];
  metafile: Metafile;
  /** The .mjs files loaded at cold start (entry + static imports), paths relative to REPO_ROOT. */
  coldStart: string[];
  coldStartBytes: number;
  totalBytes: number;
  /** Bytes of the tokenizer's ranks in the output (counted in totalBytes). */
  tokenizerRanksBytes: number;
}

const bundles = new Map<string, Bundle>();
const isJs = (f: OutputFile) => f.path.endsWith('.mjs');

beforeAll(async () => {
  await Promise.all(
    FUNCTIONS.map(async (fn) => {
      const outdir = resolve(OUT_ROOT, fn.name);
      const result = await build({ ...esbuildOptionsFor(resolve(REPO_ROOT, fn.entry), outdir), write: false, metafile: true });
      const coldStart = loadedFiles(result.metafile, relative(REPO_ROOT, resolve(outdir, BUNDLE_ENTRY_FILE)));
      const bytesOf = (paths: string[]) => paths.reduce((n, p) => n + result.metafile.outputs[p]!.bytes, 0);
      bundles.set(fn.name, {
        name: fn.name,
        files: result.outputFiles,
        metafile: result.metafile,
        coldStart,
        coldStartBytes: bytesOf(coldStart),
        totalBytes: result.outputFiles.filter(isJs).reduce((n, f) => n + f.contents.byteLength, 0),
        tokenizerRanksBytes: Object.values(result.metafile.outputs)
          .flatMap((o) => Object.entries(o.inputs))
          .filter(([input]) => input.includes(TOKENIZER_RANKS))
          .reduce((n, [, i]) => n + i.bytesInOutput, 0),
      });
    }),
  );
  const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;
  console.log(
    [
      'Function bundles (production esbuild settings: minified ESM, node22, split):',
      `${'function'.padEnd(20)} ${'cold start'.padStart(12)} ${'all code'.padStart(10)} ${'files'.padStart(6)}`,
      ...FUNCTIONS.map((f) => bundles.get(f.name)!).map(
        (b) => `${b.name.padEnd(20)} ${kb(b.coldStartBytes).padStart(12)} ${kb(b.totalBytes).padStart(10)} ${String(b.files.filter(isJs).length).padStart(6)}`,
      ),
    ].join('\n'),
  );
}, 180_000);

describe('function bundles (production esbuild settings)', () => {
  it('bundles every deployed function: an index.mjs entry, each code file with its source map', () => {
    expect([...bundles.keys()].sort()).toEqual(FUNCTIONS.map((f) => f.name).sort());
    expect(new Set(FUNCTIONS.map((f) => f.name)).size).toBe(FUNCTIONS.length);
    for (const b of bundles.values()) {
      const paths = new Set(b.files.map((f) => f.path));
      expect(
        [...paths].some((p) => p.endsWith(`/${b.name}/${BUNDLE_ENTRY_FILE}`)),
        b.name,
      ).toBe(true);
      for (const f of b.files.filter(isJs)) expect(paths.has(`${f.path}.map`), f.path).toBe(true);
    }
  });

  it('the gateway loads at most 250 KB at cold start; the guardrail evaluator is a chunk loaded on demand', () => {
    const gateway = bundles.get('gateway')!;
    expect(gateway.coldStartBytes, `${gateway.coldStartBytes} bytes`).toBeLessThanOrEqual(GATEWAY_COLD_START_BUDGET);
    const inputsOf = (paths: string[]) => new Set(paths.flatMap((p) => Object.keys(gateway.metafile.outputs[p]!.inputs)));
    const atColdStart = inputsOf(gateway.coldStart);
    const everything = inputsOf(Object.keys(gateway.metafile.outputs));
    expect(everything.has('functions/guardrails/evaluate.ts')).toBe(true);
    expect(atColdStart.has('functions/guardrails/evaluate.ts')).toBe(false);
    expect([...atColdStart].some((input) => input.includes('node_modules/jose/'))).toBe(false);
    expect(atColdStart.has('functions/gateway/pipeline.ts')).toBe(true);
  });

  it.each(FUNCTIONS.map((f) => f.name))('%s stays under 3 MB (the tokenizer ranks aside)', (name) => {
    const { totalBytes, tokenizerRanksBytes } = bundles.get(name)!;
    expect(totalBytes).toBeGreaterThan(1024);
    expect(totalBytes - tokenizerRanksBytes, `${name}: ${totalBytes} bytes, ${tokenizerRanksBytes} of them tokenizer ranks`).toBeLessThan(MAX_FUNCTION_BYTES);
  });

  it('the gateway carries the tokenizer ranks in chunks of their own, loaded on the first local count, within their cap', () => {
    const gateway = bundles.get('gateway')!;
    expect(gateway.tokenizerRanksBytes).toBeGreaterThan(1024 * 1024);
    expect(gateway.tokenizerRanksBytes).toBeLessThan(MAX_TOKENIZER_RANKS_BYTES);
    const atColdStart = gateway.coldStart.flatMap((p) => Object.keys(gateway.metafile.outputs[p]!.inputs));
    expect(atColdStart.filter((input) => input.includes('node_modules/gpt-tokenizer/'))).toEqual([]);
    // Only the gateway and the batch worker (it runs batch lines through the gateway's own
    // route handlers, in-process) can reach a local token count.
    const carriers = new Set(['gateway', 'batch-run']);
    for (const other of bundles.values()) if (!carriers.has(other.name)) expect(other.tokenizerRanksBytes, other.name).toBe(0);
  });

  it.each(FUNCTIONS.map((f) => f.name))('%s carries its AWS SDK parts instead of importing the runtime copy', (name) => {
    const b = bundles.get(name)!;
    // esbuild's metafile lists every import left in the output (static, dynamic, require):
    // only Node built-ins and the function's own chunks, never an SDK package.
    const external = Object.values(b.metafile.outputs).flatMap((o) => o.imports.filter((i) => i.external).map((i) => i.path));
    expect(external.filter((p) => p.startsWith('@aws-sdk/') || p.startsWith('@smithy/'))).toEqual([]);
    for (const path of new Set(external)) expect(builtinModules.includes(path.replace(/^node:/, '')), `${name} imports ${path}`).toBe(true);
    // ESM with the createRequire banner in every code file.
    for (const f of b.files.filter(isJs)) expect(f.text.startsWith(ESM_REQUIRE_BANNER), f.path).toBe(true);
  });
});

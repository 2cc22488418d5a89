import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, relative, resolve } from 'node:path';
import type { Metafile } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { BUNDLE_ENTRY_FILE, loadedFiles, ESM_REQUIRE_BANNER, REPO_ROOT } from '../../infra/bundling';
import { DEPLOYED_FUNCTIONS, filesUnder, sharedBundleOf } from '../support/production-bundles';

// Every function the stacks deploy, built with the production esbuild settings
// (infra/bundling.ts, what `functionCode` runs at synth): endpoint groups, workflow workers
// and the bootstrap custom resource, each on its own (chunks are per function), once per test
// run (test/support/production-bundles.ts). Sizes are printed, not benchmarked.

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

const FUNCTIONS = DEPLOYED_FUNCTIONS;

/** A file of a bundle as esbuild reported it (path as built). */
interface BundleFile {
  path: string;
  contents: Uint8Array;
  text: string;
}

interface Bundle {
  name: string;
  files: BundleFile[];
  metafile: Metafile;
  /** The .mjs files loaded at cold start (entry + static imports), paths relative to REPO_ROOT. */
  coldStart: string[];
  coldStartBytes: number;
  totalBytes: number;
  /** Bytes of the tokenizer's ranks in the output (counted in totalBytes). */
  tokenizerRanksBytes: number;
}

const bundles = new Map<string, Bundle>();
const isJs = (f: BundleFile) => f.path.endsWith('.mjs');

beforeAll(async () => {
  await Promise.all(
    FUNCTIONS.map(async (fn) => {
      // The run's shared production build (what production-bundles and the multi-concurrency
      // tests serve), read from disk; paths as esbuild reported them, so the metafile's match.
      const { dir, builtAs, metafile } = await sharedBundleOf(fn.name);
      const files = filesUnder(dir)
        .filter((f) => !f.endsWith('metafile.json'))
        .map((f) => {
          const contents = readFileSync(f);
          return { path: join(builtAs, relative(dir, f)), contents, text: contents.toString('utf8') };
        });
      const coldStart = loadedFiles(metafile, relative(REPO_ROOT, resolve(builtAs, BUNDLE_ENTRY_FILE)));
      const bytesOf = (paths: string[]) => paths.reduce((n, p) => n + metafile.outputs[p]!.bytes, 0);
      bundles.set(fn.name, {
        name: fn.name,
        files,
        metafile,
        coldStart,
        coldStartBytes: bytesOf(coldStart),
        totalBytes: files.filter(isJs).reduce((n, f) => n + f.contents.byteLength, 0),
        tokenizerRanksBytes: Object.values(metafile.outputs)
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

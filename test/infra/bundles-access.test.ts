import { relative, resolve } from 'node:path';
import { build } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { TABLE_NAMES } from '../../functions/shared/tables';
import { BUNDLE_ENTRY_FILE, esbuildOptionsFor, loadedFiles } from '../../infra/bundling';
import { ENDPOINT_GROUPS } from '../../infra/endpoint-groups';
import { FUNCTION_ACCESS, WORKER_ACCESS, type FunctionAccess } from '../../infra/stacks/access';
import { BOOTSTRAP_WORKER } from '../../infra/stacks/bootstrap-stack';
import { REPO_ROOT } from '../../infra/stacks/endpoint-function';
import { WORKERS } from '../../infra/workflows/registry';

// Least privilege, checked against the code that is deployed: each function's bundle (tree-
// shaken like production, but not minified, so the storage helpers keep their names) must
// touch exactly the tables and key uses that infra/stacks/access.ts grants it. A table the
// code uses without a grant fails in AWS only (IAM is not enforced locally); a grant the code
// does not use is wider than needed. Either way: change access.ts, on purpose.

const FUNCTIONS: Array<{ name: string; entry: string; access: FunctionAccess }> = [
  ...ENDPOINT_GROUPS.map((g) => ({ name: g.name, entry: g.entry, access: FUNCTION_ACCESS[g.name]! })),
  ...WORKERS.map((w) => ({ name: w.name, entry: w.entry, access: WORKER_ACCESS[w.name]! })),
  { name: BOOTSTRAP_WORKER.name, entry: BOOTSTRAP_WORKER.entry, access: WORKER_ACCESS[BOOTSTRAP_WORKER.name]! },
];

/** Storage helpers (functions/shared/db/ops.ts, list.ts, assistants/store/db.ts) by what they do. */
const READS = new Set(['getItem', 'queryAll', 'txCheck', 'listPage']);
const WRITES = new Set(['putNew', 'putItem', 'batchedPuts', 'updateItem', 'deleteItem', 'txPut', 'txUpdate', 'txDelete', 'deletePartition', 'transactWrite']);
/** Calls in bundled libraries whose first argument happens to spell a table name. */
const NOT_STORAGE_CALLS = new Set(['_setupListChangedHandler']);

type Use = 'read' | 'write' | 'unknown';
interface Usage {
  tables: Map<string, Set<Use>>;
  kms: Set<string>;
  /** Sends secretsmanager:GetSecretValue (the SSO client secret, functions/console/sso/client-secret.ts). */
  readsSecrets: boolean;
}

const usage = new Map<string, Usage>();

/** Which tables a bundle names, and how: calls with a table name (or a constant holding one) as first argument, `table:` targets. */
function analyse(code: string): Usage {
  const names = TABLE_NAMES.join('|');
  const tables = new Map<string, Set<Use>>();
  const add = (table: string, use: Use) => (tables.get(table) ?? tables.set(table, new Set()).get(table)!).add(use);
  const classify = (fn: string): Use => {
    const base = fn.split('.').pop()!.replace(/\d+$/, '');
    return READS.has(base) ? 'read' : WRITES.has(base) ? 'write' : 'unknown';
  };
  // `const TABLE = "prompts"` (esbuild may suffix a renamed binding with digits).
  const constants = new Map([...code.matchAll(new RegExp(`(?:var|let|const) ([\\w$]+) = "(${names})";`, 'g'))].map((m) => [m[1]!, m[2]!]));
  for (const m of code.matchAll(new RegExp(`([\\w$.]+)\\(\\s*"(${names})"`, 'g'))) {
    // The MCP SDK's client names its capabilities ("prompts") in calls of its own, not tables.
    if (NOT_STORAGE_CALLS.has(m[1]!.split('.').pop()!)) continue;
    add(m[2]!, classify(m[1]!));
  }
  for (const [ident, table] of constants) {
    for (const m of code.matchAll(new RegExp(`([\\w$.]+)\\(\\s*${ident.replace(/\$/g, '\\$')}\\b`, 'g'))) add(table, classify(m[1]!));
    if (new RegExp(`table: ${ident.replace(/\$/g, '\\$')}\\b`).test(code)) add(table, 'read');
  }
  for (const m of code.matchAll(new RegExp(`table: "(${names})"`, 'g'))) add(m[1]!, 'read');
  // KMS operations are sent by name through the AWS JSON client (functions/shared/crypto/envelope.ts).
  const kms = new Set(['Decrypt', 'GenerateDataKey', 'Encrypt'].filter((op) => new RegExp(`\\.send\\(\\s*"${op}"`).test(code)).map((op) => `kms:${op}`));
  const readsSecrets = /\.send\(\s*"GetSecretValue"/.test(code);
  return { tables, kms, readsSecrets };
}

beforeAll(async () => {
  // Each function on its own (chunks are per function); every chunk its code can load
  // counts, at cold start or on demand.
  await Promise.all(
    FUNCTIONS.map(async (fn) => {
      const outdir = resolve(REPO_ROOT, 'cdk.out', 'bundle-access-test', fn.name);
      const result = await build({
        ...esbuildOptionsFor(resolve(REPO_ROOT, fn.entry), outdir),
        minify: false,
        sourcemap: false,
        write: false,
        metafile: true,
      });
      const reachable = new Set(
        loadedFiles(result.metafile, relative(REPO_ROOT, resolve(outdir, BUNDLE_ENTRY_FILE)), { onDemand: true }).map((p) => resolve(REPO_ROOT, p)),
      );
      const code = result.outputFiles.filter((f) => reachable.has(f.path)).map((f) => f.text);
      if (code.length === 0) throw new Error(`no bundle for ${fn.name}`);
      usage.set(fn.name, analyse(code.join('\n')));
    }),
  );
}, 180_000);

const KMS_BY_ACCESS = { none: [], read: ['kms:Decrypt'], readWrite: ['kms:Decrypt', 'kms:GenerateDataKey'] } as const;

describe('least privilege, checked against each function bundle', () => {
  it.each(FUNCTIONS.map((f) => [f.name, f] as const))('%s uses exactly the tables access.ts grants it', (name, fn) => {
    const used = usage.get(name)!.tables;
    const summary = JSON.stringify(Object.fromEntries([...used].map(([t, u]) => [t, [...u]])));
    for (const [table, uses] of used) {
      const granted = fn.access.tables[table as keyof typeof fn.access.tables];
      expect(
        granted,
        `${name} uses the ${table} table (${[...uses].join(', ')}) without a grant in infra/stacks/access.ts; bundle uses ${summary}`,
      ).toBeDefined();
      if (uses.has('write')) expect(granted, `${name} writes ${table} but is granted '${granted}'`).toBe('readWrite');
    }
    for (const [table, granted] of Object.entries(fn.access.tables)) {
      const uses = used.get(table);
      expect(uses, `${name} is granted ${table}:${granted} but its bundle never touches that table; bundle uses ${summary}`).toBeDefined();
      if (granted === 'readWrite') expect(uses!.has('write') || uses!.has('unknown'), `${name} is granted ${table}:readWrite but only reads it`).toBe(true);
    }
  });

  it.each(FUNCTIONS.map((f) => [f.name, f] as const))('%s calls exactly the KMS operations its grant allows', (name, fn) => {
    expect([...usage.get(name)!.kms].sort()).toEqual([...KMS_BY_ACCESS[fn.access.providerCredentials]].sort());
  });

  it('only the admin function reads Secrets Manager: the one ConsoleSso grants GetSecretValue (-c ssoClientSecretArn)', () => {
    const readers = FUNCTIONS.filter((f) => usage.get(f.name)!.readsSecrets).map((f) => f.name);
    expect(readers).toEqual(['admin']);
  });
});

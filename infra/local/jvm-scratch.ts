import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * DynamoDB Local's java.io.tmpdir, a folder per JVM: it copies its SQLite library (about
 * 0.9 MB) there on every start and deletes it only on an orderly exit. The runtime removes
 * the folder when the JVM ends, and its watchdog when node was killed; a `kill -9` of the
 * whole process group leaves it behind, so each start also removes the folders whose JVM is
 * gone.
 */
const PREFIX = 'dynamodb-local-';
/** The JVM's pid, written once it is spawned. */
const OWNER_FILE = 'jvm.pid';
/** A folder with no pid yet, this young, may be another process's start under way. */
const UNCLAIMED_GRACE_MS = 60_000;

export interface JvmScratch {
  dir: string;
  /** Records the JVM that uses the folder, so that a later sweep knows whether it still runs. */
  claim(pid: number): void;
  remove(): void;
}

export function makeJvmScratch(root = tmpdir()): JvmScratch {
  const dir = mkdtempSync(join(root, PREFIX));
  return {
    dir,
    claim: (pid) => writeFileSync(join(dir, OWNER_FILE), String(pid)),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Removes the folders of JVMs that are no longer running; returns their paths. */
export function sweepOrphanedScratch(root = tmpdir(), now = Date.now()): string[] {
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(root).filter((n) => n.startsWith(PREFIX));
  } catch {
    return removed;
  }
  for (const name of names) {
    const dir = join(root, name);
    try {
      const owner = ownerOf(dir);
      const orphaned = owner === undefined ? now - statSync(dir).mtimeMs > UNCLAIMED_GRACE_MS : !runsDynamoDbLocal(owner);
      if (!orphaned) continue;
      rmSync(dir, { recursive: true, force: true });
      removed.push(dir);
    } catch {
      // Another user's folder, or one removed meanwhile: not ours to sweep.
    }
  }
  return removed;
}

function ownerOf(dir: string): number | undefined {
  const file = join(dir, OWNER_FILE);
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8'));
  return Number.isSafeInteger(pid) && pid > 0 ? pid : 0;
}

/** The pid is a running DynamoDB Local (not a zombie, and not another program that got the pid since). */
function runsDynamoDbLocal(pid: number): boolean {
  if (pid === 0) return false;
  if (existsSync('/proc/self/cmdline')) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (stat.charAt(stat.lastIndexOf(')') + 2) === 'Z') return false;
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('DynamoDBLocal');
    } catch {
      return false;
    }
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

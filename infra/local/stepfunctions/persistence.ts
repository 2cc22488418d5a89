import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** What is kept of a RUNNING execution: enough to start it over after a restart. */
export interface SavedExecution {
  /** Registry name of the machine. */
  machine: string;
  name: string;
  input: string;
  /** ISO time. */
  startDate: string;
}

export interface ExecutionFile {
  /** The running executions, replacing what was saved (atomically: a crash leaves the old file). */
  save(running: readonly SavedExecution[]): void;
  /** What was running when the runtime last stopped ([] when nothing was saved). */
  load(): SavedExecution[];
  readonly path: string;
}

/** `<dataDir>/executions.json`; the folder is created. */
export function executionFile(dataDir: string): ExecutionFile {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, 'executions.json');
  return {
    path,
    save(running) {
      const tmp = `${path}.tmp`;
      writeFileSync(tmp, JSON.stringify(running, null, 2));
      renameSync(tmp, path);
    },
    load() {
      return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as SavedExecution[]) : [];
    },
  };
}

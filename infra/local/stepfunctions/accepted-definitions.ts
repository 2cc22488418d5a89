import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';

const REPO_ROOT = resolve(import.meta.dirname, '../../..');

/** Where accepted definitions are remembered (the usual home of tools' caches). */
export const ACCEPTED_DEFINITIONS_DIR = join(REPO_ROOT, 'node_modules/.cache/ai-gateway/asl-accepted');

const VALIDATION = { checkArn: true, checkPaths: true } as const;

const libraryVersion = (() => {
  try {
    return String(JSON.parse(readFileSync(join(REPO_ROOT, 'node_modules/aws-local-stepfunctions/package.json'), 'utf8')).version);
  } catch {
    return 'unknown';
  }
})();

/** The file that says `definition` passed the library's validation (this version, these options). */
export const acceptedMarker = (definition: StateMachineDefinition, dir = ACCEPTED_DEFINITIONS_DIR): string =>
  join(
    dir,
    createHash('sha256')
      .update(JSON.stringify([libraryVersion, VALIDATION, definition]))
      .digest('hex'),
  );

/**
 * The emulator's runner for a definition, validated the way the library validates it (its
 * ASL schema, ARNs and paths) unless this exact definition already passed with this version
 * of the library. The library compiles its JSON schemas anew for every machine it validates
 * (0.4-0.8 s of CPU a machine, on every start of the local runtime and of every test file's
 * gateway); a definition that passed is remembered on disk by a hash of its content, the
 * options and the library's version. Only accepted definitions are remembered: a broken one
 * is refused at every start.
 */
export function runnerFor(definition: StateMachineDefinition, dir = ACCEPTED_DEFINITIONS_DIR): StateMachine {
  const marker = acceptedMarker(definition, dir);
  // The library changes the definition it is given: the caller's stays as hashed.
  const own = structuredClone(definition);
  if (existsSync(marker)) return new StateMachine(own, { validationOptions: { noValidate: true } });
  const runner = new StateMachine(own, { validationOptions: VALIDATION });
  try {
    mkdirSync(dir, { recursive: true });
    writeFileSync(marker, '');
  } catch {
    // A read-only checkout validates at every start, as before.
  }
  return runner;
}

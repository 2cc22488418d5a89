import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StateMachineDefinition } from 'aws-local-stepfunctions';
import { afterEach, describe, expect, it } from 'vitest';
import { acceptedMarker, runnerFor } from '../../infra/local/stepfunctions/accepted-definitions';

const dirs: string[] = [];
const scratch = () => {
  const dir = mkdtempSync(join(tmpdir(), 'asl-accepted-'));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const valid = { StartAt: 'Done', States: { Done: { Type: 'Pass', Result: { ok: true }, End: true } } } as unknown as StateMachineDefinition;
/** A Task whose Resource is no ARN: the library's schema refuses it. */
const broken = { StartAt: 'Call', States: { Call: { Type: 'Task', Resource: 'not-an-arn', End: true } } } as unknown as StateMachineDefinition;

describe('state machine definitions the emulator has accepted', () => {
  it('a definition the library refuses is refused at every start, and never remembered', () => {
    const dir = scratch();
    expect(() => runnerFor(broken, dir)).toThrow(/invalid/);
    expect(() => runnerFor(broken, dir)).toThrow(/invalid/);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('a definition that passed is remembered by its content, and its runner runs the same', async () => {
    const dir = scratch();
    const first = runnerFor(valid, dir);
    expect(readdirSync(dir)).toHaveLength(1);
    const again = runnerFor(valid, dir);
    expect(readdirSync(dir)).toHaveLength(1);
    for (const runner of [first, again]) expect(await runner.run({}).result).toEqual({ ok: true });
    // Another definition (one field changed) has a marker of its own.
    expect(acceptedMarker({ ...valid, Comment: 'changed' } as StateMachineDefinition, dir)).not.toBe(acceptedMarker(valid, dir));
  });

  it('a remembered definition is not validated again (which is why the marker is a hash of the content)', () => {
    const dir = scratch();
    writeFileSync(acceptedMarker(broken, dir), '');
    expect(() => runnerFor(broken, dir)).not.toThrow();
  });
});

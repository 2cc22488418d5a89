import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, type AppProps } from 'aws-cdk-lib';
import { afterAll } from 'vitest';

/**
 * A CDK App for a test. Made without an outdir, an App synthesises into a new
 * /tmp/cdk.outXXXX that nothing removes (about 40 per run). Each App here gets its own
 * folder (apps synthesised one after another must not read each other's templates) under one
 * per test file, removed after the file. CDK_OUTDIR is not the way: it makes every App
 * synthesise again when the process exits, as under the CDK CLI.
 */
let root: string | undefined;
afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

export function testApp(props: Omit<AppProps, 'outdir'> = {}): App {
  root ??= mkdtempSync(join(tmpdir(), 'gateway-test-cdk-'));
  return new App({ ...props, outdir: mkdtempSync(join(root, 'cdk.out-')) });
}

import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { App, type AppProps } from 'aws-cdk-lib';
import { inject } from 'vitest';

/**
 * A CDK App for a test. Made without an outdir, an App synthesises into a new
 * /tmp/cdk.outXXXX that nothing removes (about 40 per run). Each App here gets its own
 * folder (apps synthesised one after another must not read each other's templates) under the
 * run's, which infra-global-setup.ts removes. CDK_OUTDIR is not the way: it makes every App
 * synthesise again when the process exits, as under the CDK CLI.
 */
export function testApp(props: Omit<AppProps, 'outdir'> = {}): App {
  return new App({ ...props, outdir: mkdtempSync(join(inject('cdkOutRoot'), 'cdk.out-')) });
}

import { join, resolve } from 'node:path';

/** Where a test run's shared bundles live (production-bundles.ts); global-setup.ts removes it when the run ends. */
export const sharedBundlesRoot = (runId: string) => join(resolve(import.meta.dirname, '../..'), 'cdk.out', 'test-bundles', runId);

import { randomUUID } from 'node:crypto';
import { join, resolve } from 'node:path';

/** Where a test run's shared bundles live (production-bundles.ts); global-setup.ts removes it when the run ends. */
export const sharedBundlesRoot = (runId: string) => join(resolve(import.meta.dirname, '../..'), 'cdk.out', 'test-bundles', runId);

/**
 * The run's id, the same for every project's global setup (they run in vitest's one main
 * process), so that the projects share one production build.
 */
export const testRunId = () => (process.env.GATEWAY_TEST_RUN_ID ??= randomUUID());

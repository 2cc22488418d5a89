import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { sharedBundlesRoot, testRunId } from './shared-dirs';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Where the infra tests' CDK apps synthesise (cdk-app.ts); removed when the run ends. */
    cdkOutRoot: string;
  }
}

/**
 * The infra tests synthesise stacks and read the production bundles (shared with the main
 * project, global-setup.ts): no DynamoDB Local, one folder for every App's output.
 */
export default function setup(project: TestProject) {
  const root = mkdtempSync(join(tmpdir(), 'gateway-test-cdk-'));
  project.provide('cdkOutRoot', root);
  const runId = testRunId();
  project.provide('testRunId', runId);
  return () => {
    rmSync(root, { recursive: true, force: true });
    rmSync(sharedBundlesRoot(runId), { recursive: true, force: true });
  };
}

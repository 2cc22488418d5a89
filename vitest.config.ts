import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: ['test/support/setup.ts'],
    pool: 'forks',
    // Three files at a time on two cores: the suite waits on I/O and timers (a CI run with two
    // workers kept 1.15 cores busy on average), and CI must stay under 15 minutes.
    maxWorkers: 3,
    testTimeout: 30_000,
    hookTimeout: 90_000,
    env: {
      POWERTOOLS_LOG_LEVEL: 'WARN',
      POWERTOOLS_METRICS_DISABLED: 'true',
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    },
  },
});

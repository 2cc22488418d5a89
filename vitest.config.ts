import { defineConfig } from 'vitest/config';

/** What every test file shares. */
const common = {
  pool: 'forks',
  testTimeout: 30_000,
  hookTimeout: 90_000,
  env: {
    POWERTOOLS_LOG_LEVEL: 'WARN',
    POWERTOOLS_METRICS_DISABLED: 'true',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    // The DynamoDB Locals that tests start themselves (crash, restart and signal tests) live
    // a few seconds and serve a few hundred requests: the JIT's first tier alone halves the
    // CPU of their start-up (~5.5 s -> ~2.8 s a JVM on two cores), which the suite pays about
    // forty times. The run's shared DynamoDB Local (global-setup.ts) keeps the full JIT.
    JAVA_TOOL_OPTIONS: '-XX:TieredStopAtLevel=1',
  },
} as const;

export default defineConfig({
  test: {
    // Four files at a time on two cores: the suite waits on I/O and timers (three workers kept
    // 2.45 files busy on average, 751 s of wall time for 1,844 s of tests), and CI must stay
    // under 15 minutes (three workers: 13.5 with 182 files).
    maxWorkers: 4,
    projects: [
      {
        // Files share their processes (isolate off): the libraries they load (the AWS SDK, the
        // provider SDKs, vitest's own) are loaded a few times a run rather than once a file,
        // about 40 % of the suite's CPU. Each file still imports the project's own modules
        // afresh and leaves the environment as it found it (test/support/setup.ts).
        test: {
          ...common,
          name: 'main',
          include: ['test/**/*.test.ts'],
          exclude: ['**/node_modules/**', 'test/infra/**'],
          isolate: false,
          globalSetup: ['test/support/global-setup.ts'],
          setupFiles: ['test/support/setup.ts'],
        },
      },
      {
        // CDK synthesis and bundle analysis, no storage: the files share their processes, so
        // aws-cdk-lib is loaded a few times a run rather than once a file (~45 s of CPU).
        test: {
          ...common,
          name: 'infra',
          include: ['test/infra/**/*.test.ts'],
          isolate: false,
          // aws-cdk-lib loads its modules as a synthesis first needs them: whichever test of a
          // process synthesises first pays for that and cdk-nag's rules (31.7 s once, with the
          // files shuffled on a loaded machine; 3-6 s in a warm process).
          testTimeout: 120_000,
          globalSetup: ['test/support/infra-global-setup.ts'],
          setupFiles: ['infra/local/awslambda-shim.ts'],
        },
      },
    ],
  },
});

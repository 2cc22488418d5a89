/**
 * V8 options of every gateway process: the Lambda functions (NODE_OPTIONS, set by
 * infra/stacks/gateway-function.ts) and the local runtime (`npm start` in package.json, the
 * benchmarks' gateway). A test keeps package.json's start script in step.
 *
 * A 16 MB young-generation semi-space, stated so that it does not depend on the memory V8
 * sees. Sessions 3-19 ran 32 MB: fewer scavenges under load (82 -> 36 in one run at 640
 * req/s), but with 1,000 streams open in one process the nursery grows to its maximum, and
 * the peak RSS was 266-271 MB against issue 38's 256 MB goal; with 16 MB it is 231-248 MB
 * (four runs each, session 20). In paired A/B rounds this session the CPU per request moved
 * by -6 % to +19 % depending on the scenario: within this machine's noise (bench/README.md,
 * item 8).
 */
export const NODE_HEAP_OPTIONS: readonly string[] = ['--max-semi-space-size=16'];

/** NODE_OPTIONS of the Lambda functions: the heap options plus TypeScript stack traces. */
export const LAMBDA_NODE_OPTIONS = ['--enable-source-maps', ...NODE_HEAP_OPTIONS].join(' ');

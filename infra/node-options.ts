/**
 * V8 options of every gateway process: the Lambda functions (NODE_OPTIONS, set by
 * infra/stacks/gateway-function.ts) and the local runtime (`npm start` in package.json, the
 * benchmarks' gateway). A test keeps package.json's start script in step.
 *
 * A 32 MB young-generation semi-space (V8's default is 16 MB on 64-bit): a request
 * allocates tens of KB that die young, so a larger nursery lets more of them die before a
 * scavenge. Measured on the gateway at 640 req/s: scavenges 82 -> 36, GC time 400 ->
 * 100 ms over the same run (bench/README.md). It costs up to 32 MB more of the
 * function's memory (1024 MB or more by default).
 */
export const NODE_HEAP_OPTIONS: readonly string[] = ['--max-semi-space-size=32'];

/** NODE_OPTIONS of the Lambda functions: the heap options plus TypeScript stack traces. */
export const LAMBDA_NODE_OPTIONS = ['--enable-source-maps', ...NODE_HEAP_OPTIONS].join(' ');

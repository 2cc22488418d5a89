/**
 * `npm run demo-model`: a stand-in for a local model server, so the README's first request
 * needs no provider account and no Ollama. It speaks the OpenAI API as Ollama's `/v1` layer
 * does (no key needed) on 127.0.0.1:11434, Ollama's port: chat completions (JSON, or SSE with
 * `stream: true`), embeddings and `/v1/models`. Its "model" answers `echo: <your last
 * message>`, streamed word by word. It is the fake the tests use (test/fakes/openai.ts).
 */
import { startOpenAIFake } from '../../test/fakes/openai';

const port = Number(process.env.DEMO_MODEL_PORT ?? 11434);
const server = await startOpenAIFake({ keyless: true, port, chunkDelayMs: 40 });
// The fake records requests for tests' assertions; a long-running demo forgets them.
const forget = setInterval(() => server.reset(), 60_000);
forget.unref();

console.log(`Demo model (OpenAI-compatible, any model name) at ${server.url}/v1`);
const stop = () => {
  void server.close().then(() => process.exit(0));
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);

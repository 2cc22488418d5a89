/**
 * Fake provider servers that speak the real wire formats, for integration
 * tests and benchmarks. Each `start…Fake(options)` listens on 127.0.0.1 with a random port
 * and returns a FakeServer: `{ url, port, requests, count(), last(), setBehaviour(), reset(), close() }`.
 * The shared knobs (errors, latency, cuts, slow streams) are described in ./behaviour.ts.
 */
import { startAnthropicFake } from './anthropic';
import type { FakeOptions, FakeServer } from './behaviour';
import { startBedrockFake, type BedrockFakeOptions } from './bedrock';
import { startCohereFake } from './cohere';
import { startGeminiFake } from './gemini';
import { startOpenAIFake } from './openai';

export { startOpenAIFake, openaiError, fakeSpeechBytes, FAKE_OPENAI_MODELS } from './openai';
export { startAnthropicFake, anthropicError, TOOL_PREAMBLE, FAKE_ANTHROPIC_MODELS } from './anthropic';
export { startGeminiFake, googleError, FAKE_GEMINI_MODELS } from './gemini';
export {
  startBedrockFake,
  bedrockError,
  eventStreamCodec,
  decodeEventStream,
  eventFrame,
  exceptionFrame,
  toUtf8,
  fromUtf8,
  FAKE_BEDROCK_MODELS,
  type BedrockFakeOptions,
} from './bedrock';
export { startCohereFake, cohereError, TOOL_PLAN, FAKE_COHERE_MODELS } from './cohere';
export { startWatsonxFake, watsonxError, FAKE_WATSONX_MODELS, type WatsonxFakeOptions } from './watsonx';
export { startReplicateFake, replicateError } from './replicate';
export { answer, embed, embedBase64, relevance, rank, wordCount, pieces } from './answer';
export type { Behaviour, FakeOptions, FakeReply, FakeServer, RecordedRequest } from './behaviour';
export type { MultipartForm, MultipartFile } from './multipart';

export interface AllFakes {
  openai: FakeServer;
  anthropic: FakeServer;
  gemini: FakeServer;
  bedrock: FakeServer;
  cohere: FakeServer;
  /** Reset every fake (requests and behaviour). */
  reset(): void;
  close(): Promise<void>;
}

/** Start one fake of each family (shared options; `bedrock` may add its own). */
export async function startAllFakes(options: FakeOptions = {}, bedrock: BedrockFakeOptions = {}): Promise<AllFakes> {
  const [openai, anthropic, gemini, bedrockFake, cohere] = await Promise.all([
    startOpenAIFake(options),
    startAnthropicFake(options),
    startGeminiFake(options),
    startBedrockFake({ ...options, ...bedrock }),
    startCohereFake(options),
  ]);
  const all = [openai, anthropic, gemini, bedrockFake, cohere];
  return {
    openai,
    anthropic,
    gemini,
    bedrock: bedrockFake,
    cohere,
    reset: () => all.forEach((f) => f.reset()),
    close: async () => {
      await Promise.all(all.map((f) => f.close()));
    },
  };
}

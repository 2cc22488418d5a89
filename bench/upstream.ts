/**
 * The fake upstream of the benchmarks, in its own process: the test fakes (test/fakes),
 * which speak the real OpenAI / Anthropic / Cohere wire formats, started with fixed
 * latencies. Prints one JSON line `{name: url}` once listening. The fakes record every
 * request for tests; here the record is cleared every second so memory stays flat.
 */
import { startAnthropicFake, startCohereFake, startOpenAIFake, type FakeServer } from '../test/fakes';

/** Delay between stream frames of the slow fake (the 1,000-stream RSS scenario). */
export const SLOW_CHUNK_DELAY_MS = Number(process.env.BENCH_SLOW_CHUNK_DELAY_MS ?? 400);
/** Delay between stream frames of the cadence fake (the open harness's inter-event delay). */
export const CADENCE_MS = Number(process.env.BENCH_CADENCE_MS ?? 10);

const fakes: Record<string, FakeServer> = {
  openai0: await startOpenAIFake(),
  openai50: await startOpenAIFake({ latencyMs: 50 }),
  openai2000: await startOpenAIFake({ latencyMs: 2000 }),
  anthropic0: await startAnthropicFake(),
  anthropic50: await startAnthropicFake({ latencyMs: 50 }),
  openaiSlow: await startOpenAIFake({ chunkDelayMs: SLOW_CHUNK_DELAY_MS }),
  // Many small frames at a fixed cadence: the inter-event delay a proxy adds (open harness).
  openaiCadence: await startOpenAIFake({ chunkDelayMs: CADENCE_MS }),
  cohere0: await startCohereFake(),
};

setInterval(() => {
  for (const fake of Object.values(fakes)) fake.reset();
}, 1000).unref();

process.stdout.write(`${JSON.stringify(Object.fromEntries(Object.entries(fakes).map(([name, f]) => [name, f.url])))}\n`);
process.on('SIGTERM', () => process.exit(0));

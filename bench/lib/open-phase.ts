/**
 * The open-harness phase of `npm run bench` (issue 38 item 3): the figures of
 * open-harness.ts for the direct call, the bare proxy and chat with every feature on, in
 * one run; then the soak of a fresh gateway beside the bare proxy.
 */
import { setUpFullChat } from './admin';
import { boundedThroughput, OPEN_SCENARIO, type OpenHarnessResults, sequentialLatency, soak, streamCadence } from './open-harness';
import { requestFor, type Targets, type Upstreams } from './scenarios';

export interface OpenPhaseDeps {
  upstreams: Upstreams;
  /** Base URL of the bare proxy's listener `i` (0: fake OpenAI at 0 ms, 3: the cadence fake). */
  bareUrl: (i: number) => string;
  barePid: number;
  startGateway: (name: string) => Promise<{ url: string; adminKey: string; pid: number; stop(): Promise<void> }>;
  /** Waits until DynamoDB Local has written the previous phase's records. */
  quietEmulator: () => Promise<void>;
  log: (msg: string) => void;
  settings: {
    sequential: number;
    boundDurationS: number;
    boundMaxRate: number;
    streams: number;
    cadenceMs: number;
    soakSeconds: number;
    soakRate: number;
    soakSampleS: number;
  };
}

/** Issue 38 item 3 on a fresh gateway, chat with every feature on; then the soak on another. */
export async function runOpenHarnessPhase(d: OpenPhaseDeps): Promise<OpenHarnessResults> {
  const { upstreams: up, bareUrl, log, quietEmulator, settings: M } = d;
  const targets: Targets = { upstreams: up, bare: { openai0: bareUrl(0), openai50: bareUrl(1) }, gateway: '', key: '', limitedKey: '' };
  const direct = requestFor('direct-openai', targets, 0);
  const gatewaySpec = (url: string, chat: { headers: Record<string, string> }, body = direct.body) => ({
    url: `${url}/v1/chat/completions`,
    method: 'POST' as const,
    headers: chat.headers,
    body,
  });
  const gw = await d.startGateway('open');
  let figures: Omit<OpenHarnessResults, 'soak'>;
  try {
    const chat = await setUpFullChat(gw.url, gw.adminKey, 'open', up.openai0);
    const specs = { direct, bare: requestFor('bare-proxy', targets, 0), gateway: gatewaySpec(gw.url, chat) };
    const sequential = await sequentialLatency(specs, M.sequential);
    log(`open harness c=1: p99 direct ${sequential.latency.direct.p99}, bare ${sequential.latency.bare.p99}, gateway ${sequential.latency.gateway.p99} ms`);
    const bounded = await boundedThroughput(specs, {
      boundMs: 10,
      durationS: M.boundDurationS,
      warmupS: 1,
      start: 100,
      max: M.boundMaxRate,
      before: quietEmulator,
    });
    log(`open harness at p99 added <= 10 ms: bare ${bounded.rate.bare} req/s, gateway ${bounded.rate.gateway} req/s`);
    const streamChat = await setUpFullChat(gw.url, gw.adminKey, 'open-stream', up.openaiCadence);
    const words = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ');
    // Usage asked for on every side: the gateway asks for it anyway (to price the stream) and
    // hides it when the caller did not; the fake paces that extra chunk like any other, so
    // without it here the gateway's stream ended one cadence later than the direct one's.
    const streamBody = JSON.stringify({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: words }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const streamSpecs = {
      direct: { ...direct, url: `${up.openaiCadence}/v1/chat/completions`, body: streamBody },
      bare: { ...requestFor('bare-proxy', targets, 0), url: `${bareUrl(3)}/v1/chat/completions`, body: streamBody },
      gateway: gatewaySpec(gw.url, streamChat, streamBody),
    };
    const streams = await streamCadence(streamSpecs, { streams: M.streams, cadenceMs: M.cadenceMs });
    log(
      `open harness streams: TTFB added bare ${streams.added.bare.ttfbP50}, gateway ${streams.added.gateway.ttfbP50} ms; gap p99 added bare ${streams.added.bare.gapP99}, gateway ${streams.added.gateway.gapP99} ms`,
    );
    figures = { scenario: OPEN_SCENARIO, sequential, bounded, streams };
  } finally {
    await gw.stop();
  }
  if (M.soakSeconds <= 0) return figures;
  await quietEmulator();
  const soakGw = await d.startGateway('soak');
  try {
    const chat = await setUpFullChat(soakGw.url, soakGw.adminKey, 'soak', up.openai0);
    log(`open harness soak: ${M.soakSeconds} s at ${M.soakRate} req/s, gateway pid ${soakGw.pid} and bare proxy pid ${d.barePid}`);
    const soaked = await soak(
      { gateway: { pid: soakGw.pid, spec: gatewaySpec(soakGw.url, chat) }, bare: { pid: d.barePid, spec: requestFor('bare-proxy', targets, 0) } },
      { seconds: M.soakSeconds, warmupS: Math.round(M.soakSeconds * 0.2), sampleEveryS: M.soakSampleS, rate: M.soakRate },
    );
    log(
      `open harness soak: plateau gateway ${soaked.gateway.plateauMb} MB (+${soaked.gateway.growthMbPerMin} MB/min), bare ${soaked.bare.plateauMb} MB (+${soaked.bare.growthMbPerMin} MB/min)`,
    );
    return { ...figures, soak: soaked };
  } finally {
    await soakGw.stop();
  }
}

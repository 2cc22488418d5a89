import { availableParallelism } from 'node:os';
import { cpuMs } from './procs';
import type { MachineCpu } from './report';
import { round } from './load';

export interface MachinePids {
  loadClient: number;
  fake: number;
  server: number;
  emulator: number;
}

/**
 * Runs one load round and charges every process on the machine its CPU per request. The
 * emulator's share runs until `settleEmulator` returns, so the request-log records it
 * writes after the round count too; the busy share is that of the round itself.
 */
export async function withMachineCpu<T extends { requests: number }>(
  pids: MachinePids,
  load: () => Promise<T>,
  settleEmulator: () => Promise<void>,
): Promise<T & { machine: MachineCpu }> {
  const read = () => ({ loadClient: cpuMs(pids.loadClient), fake: cpuMs(pids.fake), server: cpuMs(pids.server), emulator: cpuMs(pids.emulator) });
  const before = read();
  const started = performance.now();
  const result = await load();
  const wallMs = performance.now() - started;
  const loaded = read();
  await settleEmulator();
  const settled = read();
  const perRequest = (key: keyof MachinePids) => (settled[key] - before[key]) / Math.max(1, result.requests);
  const parts = { loadClient: perRequest('loadClient'), fake: perRequest('fake'), server: perRequest('server'), emulator: perRequest('emulator') };
  const busyMs = (Object.keys(parts) as Array<keyof MachinePids>).reduce((sum, key) => sum + loaded[key] - before[key], 0);
  return {
    ...result,
    machine: {
      perRequest: {
        loadClient: round(parts.loadClient, 3),
        fake: round(parts.fake, 3),
        server: round(parts.server, 3),
        emulator: round(parts.emulator, 3),
        total: round(parts.loadClient + parts.fake + parts.server + parts.emulator, 3),
      },
      busyPct: round((busyMs / (wallMs * availableParallelism())) * 100, 0),
    },
  };
}

/**
 * When the cores are full, the rate is cores / (CPU per request of the whole machine). The
 * best the gateway can do here is the bare proxy's own cost plus the emulator's work for its
 * records; 0.5 x needs the whole machine to spend at most twice the bare proxy's total.
 */
export function throughputBounds(bare: MachineCpu['perRequest'], gateway: MachineCpu['perRequest']): { ceilingRatio: number; gatewayCpuFor05: number } {
  const othersWithGateway = gateway.loadClient + gateway.fake + gateway.emulator;
  return {
    ceilingRatio: round(bare.total / (othersWithGateway + bare.server), 2),
    gatewayCpuFor05: round(2 * bare.total - othersWithGateway, 3),
  };
}

import { describe, expect, it } from 'vitest';
import { throughputBounds } from '../../bench/lib/machine-cpu';

const side = (loadClient: number, fake: number, server: number, emulator: number) => ({
  loadClient,
  fake,
  server,
  emulator,
  total: loadClient + fake + server + emulator,
});

describe("throughputBounds (the benchmark's throughput ceiling)", () => {
  it("charges the gateway side its other processes plus the bare proxy's own CPU", () => {
    const bare = side(0.04, 0.06, 0.1, 0);
    const gateway = side(0.07, 0.1, 0.4, 0.38);
    // 0.2 ms for the bare proxy's machine; 0.07 + 0.1 + 0.38 + 0.1 = 0.65 ms at best for the gateway's.
    expect(throughputBounds(bare, gateway)).toEqual({ ceilingRatio: 0.31, gatewayCpuFor05: -0.15 });
  });

  it('leaves room for the gateway when the other processes are cheap', () => {
    const bare = side(0.05, 0.05, 0.1, 0);
    const gateway = side(0.05, 0.05, 0.3, 0.02);
    expect(throughputBounds(bare, gateway)).toEqual({ ceilingRatio: 0.91, gatewayCpuFor05: 0.28 });
  });
});

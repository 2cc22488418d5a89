import { calcPrice } from '@pydantic/genai-prices';
import { gatewayRunLineCost, nativeLineCost, type BatchLineCost, type BatchLineInputs } from '../../infra/cost/batch';
import {
  growthItems,
  MEASURED_PROFILE,
  REALISTIC_PROFILE,
  recordWriteUnits,
  type FrontDoorKind,
  type GrowthContext,
  type LineItem,
} from '../../infra/cost/growth';
import {
  managedInstancesCost,
  managedInstancesFleet,
  onDemandCost,
  type ManagedInstancesSettings,
  type MeasuredInputs,
  type OnDemandSettings,
} from '../../infra/cost/model';
import { scaleRows, type ScaleRow } from '../../infra/cost/scale';
import { DEFAULT_MANAGED_INSTANCES } from '../../infra/stacks/options';

/**
 * The cost phase's tables of what grows (issue 37 item 6), the front doors (issue 38 item 4)
 * and a batch line (issue 35), from the measured inputs of bench/lib/cost.ts and the models
 * of infra/cost/. Token prices are the pricing catalogue's the gateway ships.
 */

export const FRONT_DOORS: readonly FrontDoorKind[] = ['api-gateway', 'function-url', 'cloudfront'];
/** The issue's goal: Managed Instances with a function URL, 2 s requests at 100 req/s. */
export const FRONT_DOOR_GOAL_USD = 3;
const HEADLINE = { providerLatencyS: 2, requestsPerSecond: 100 } as const;
/** One line of the API Gateway access log format (infra/stacks/api-stack.ts) with typical values. */
export const ACCESS_LOG_BYTES =
  Buffer.byteLength(
    JSON.stringify({
      requestId: '8f0e4a52-3c1b-4a5e-9d7e-2b6c1a0f9e33',
      extendedRequestId: 'Bq3xKHcGoAMFtXw=',
      requestTime: '1764201600123',
      ip: '203.0.113.45',
      userAgent: 'OpenAI/JS 5.23.0',
      method: 'POST',
      path: '/prod/v1/chat/completions',
      resourcePath: '/v1/{proxy+}',
      protocol: 'HTTP/1.1',
      status: '200',
      responseLength: '1432',
      responseLatency: '2043',
      integrationStatus: '200',
      integrationLatency: '2038',
      integrationError: '-',
      error: '-',
      errorType: '-',
    }),
  ) + 1;

export interface FrontDoorRow {
  frontDoor: FrontDoorKind;
  onDemandUsdPerMillion: number;
  managedInstancesUsdPerMillion: number;
}

export interface GrowthResults {
  frontDoors: FrontDoorRow[];
  goal: { usdPerMillion: number; goal: number; met: boolean; setting: string };
  /** The realistic request's extra items at 2 s and 100 req/s: on demand behind API Gateway, managed instances behind a function URL. */
  realistic: { profile: typeof REALISTIC_PROFILE; onDemand: LineItem[]; managedInstances: LineItem[]; onDemandTotal: number; managedInstancesTotal: number };
  recordSizes: Array<{ recordKb: number; writeUnits: number; onDemandUsdPerMillion: number; managedInstancesUsdPerMillion: number }>;
  scale: ScaleRow[];
  batchLine: Array<{ model: string; provider: string; tokensUsd: number; gatewayRun: BatchLineCost; native: BatchLineCost }>;
}

const sumOf = (items: readonly LineItem[]) => items.reduce((n, i) => n + i.usdPerMillion, 0);

export function growthTables(m: MeasuredInputs, onDemand: OnDemandSettings, managed: ManagedInstancesSettings): GrowthResults {
  const t = HEADLINE;
  const frontDoors = FRONT_DOORS.map((frontDoor) => ({
    frontDoor,
    onDemandUsdPerMillion: onDemandCost(m, t, { ...onDemand, frontDoor }).usdPerMillion,
    managedInstancesUsdPerMillion: managedInstancesCost(m, t, { ...managed, frontDoor }).usdPerMillion,
  }));
  const goalCost = frontDoors.find((r) => r.frontDoor === 'function-url')!.managedInstancesUsdPerMillion;
  const fleet = managedInstancesFleet(m, t, managed);
  const context = (mode: GrowthContext['mode'], frontDoor: FrontDoorKind): GrowthContext => ({
    mode,
    frontDoor,
    requestsPerSecond: t.requestsPerSecond,
    environments: fleet.executionEnvironments,
    requestSeconds: t.providerLatencyS,
    natGateways: managed.natGateways,
    measuredCustomMetrics: m.customMetrics,
    credentialCacheSeconds: 30,
    accessLogBytes: ACCESS_LOG_BYTES,
  });
  const od = growthItems(REALISTIC_PROFILE, context('on-demand', 'api-gateway'));
  const mi = growthItems(REALISTIC_PROFILE, context('managed-instances', 'function-url'));
  const recordSizes = [1, 2, 8].map((recordKb) => {
    const profile = { ...MEASURED_PROFILE, recordKb };
    const extra = (mode: GrowthContext['mode'], frontDoor: FrontDoorKind) =>
      growthItems(profile, context(mode, frontDoor))
        .filter((i) => i.name === 'Record size' || i.name.startsWith('DynamoDB storage') || i.name === 'Point-in-time recovery')
        .reduce((n, i) => n + i.usdPerMillion, 0);
    return {
      recordKb,
      writeUnits: recordWriteUnits(recordKb, 0),
      onDemandUsdPerMillion: extra('on-demand', 'api-gateway'),
      managedInstancesUsdPerMillion: extra('managed-instances', 'function-url'),
    };
  });
  const scale = scaleRows(m, {
    providerLatencyS: 2,
    onDemand,
    managed: { ...managed, frontDoor: 'function-url' },
    maxVCpuCount: DEFAULT_MANAGED_INSTANCES.maxVCpuCount,
    recordKb: 1,
    credentialCacheSeconds: 30,
  });
  return {
    frontDoors,
    goal: {
      usdPerMillion: goalCost,
      goal: FRONT_DOOR_GOAL_USD,
      met: goalCost <= FRONT_DOOR_GOAL_USD,
      setting: 'managed instances (defaults), function URL, 2 s, 100 req/s',
    },
    realistic: { profile: REALISTIC_PROFILE, onDemand: od, managedInstances: mi, onDemandTotal: sumOf(od), managedInstancesTotal: sumOf(mi) },
    recordSizes,
    scale,
    batchLine: batchLines(),
  };
}

/** A typical line: 1,000 input and 300 output tokens, priced by the catalogue (list prices), 2 s at the provider. */
function batchLines(): GrowthResults['batchLine'] {
  return [
    { model: 'gpt-4o-mini', provider: 'openai' },
    { model: 'claude-sonnet-4-5', provider: 'anthropic' },
  ].map(({ model, provider }) => {
    const priced = calcPrice({ input_tokens: 1000, output_tokens: 300 }, model, { providerId: provider });
    if (!priced) throw new Error(`The pricing catalogue has no price for ${provider}/${model}.`);
    const line: BatchLineInputs = {
      tokensUsd: priced.total_price,
      nativeDiscount: 0.5,
      providerLatencyS: 2,
      workerMemoryMb: 1024,
      linesInFlight: 8,
      linesPerChunk: 100,
      gatewayWriteUnitsPerLine: 6,
      lineBytes: 4000,
      fileDays: 30,
      linesPerBatch: 1000,
      // Submit, then a poll a minute for an hour (a Task and a Wait each), then collect.
      nativeTransitionsPerBatch: 130,
      nativeWriteUnitsPerLine: 1,
    };
    return { model, provider, tokensUsd: priced.total_price, gatewayRun: gatewayRunLineCost(line), native: nativeLineCost(line) };
  });
}

const usd = (v: number) => `$${v < 1 ? v.toFixed(3) : v.toFixed(2)}`;
const head = (cols: string[]) => `| ${cols.join(' | ')} |\n|${cols.map(() => '---').join('|')}|`;

export function renderGrowth(g: GrowthResults): string {
  const lines: string[] = [
    'Front doors at 2 s and 100 req/s (the measured request; answer bytes out are below, under what grows):',
    '',
    head(['front door', 'on demand $/M', 'managed instances $/M']),
    ...g.frontDoors.map((r) => `| ${r.frontDoor} | ${usd(r.onDemandUsdPerMillion)} | ${usd(r.managedInstancesUsdPerMillion)} |`),
    '',
    `Goal <= $${g.goal.goal} per million (${g.goal.setting}): ${usd(g.goal.usdPerMillion)}, **${g.goal.met ? 'met' : 'not met'}**.`,
    '',
    `What grows, per million requests at 2 s and 100 req/s, for a ${g.realistic.profile.name} (on top of the totals above):`,
    '',
    head(['item', 'on demand, API Gateway', 'managed instances, function URL', 'how (managed instances)']),
  ];
  for (const item of g.realistic.onDemand) {
    const mi = g.realistic.managedInstances.find((i) => i.name === item.name)!;
    lines.push(`| ${item.name} | ${usd(item.usdPerMillion)} | ${usd(mi.usdPerMillion)} | ${mi.detail} |`);
  }
  lines.push(
    `| **total added** | **${usd(g.realistic.onDemandTotal)}** | **${usd(g.realistic.managedInstancesTotal)}** | |`,
    '',
    'Request-log record size (write units per record, and what the size adds per million, storage and PITR included):',
    '',
    head(['record', 'WRU', 'on demand', 'managed instances']),
    ...g.recordSizes.map((r) => `| ${r.recordKb} KB | ${r.writeUnits} | ${usd(r.onDemandUsdPerMillion)} | ${usd(r.managedInstancesUsdPerMillion)} |`),
    '',
    'Scale, 2 s requests of one workspace (on demand behind API Gateway; managed instances behind function URLs, default maxVCpuCount 64):',
    '',
    head(['req/s', 'on demand $/M (concurrency)', 'managed instances $/M (fleet)', 'hottest key WCU', 'binds', 'how to raise']),
  );
  for (const r of g.scale) {
    const binding = r.quotas.filter((q) => q.binds);
    lines.push(
      `| ${r.requestsPerSecond} | ${usd(r.onDemand.usdPerMillion)} (${r.onDemand.concurrency}) | ${usd(r.managedInstances.usdPerMillion)} (${r.managedInstances.instances} × ${r.managedInstances.instanceType}, ${r.managedInstances.vcpus} vCPUs) | ${r.hottestKeyWcu} | ${binding.map((q) => `${q.quota} (${q.demand} > ${q.limit})`).join('; ') || 'nothing'} | ${binding.map((q) => q.raise).join('; ') || ''} |`,
    );
  }
  lines.push(
    '',
    'A batch line (1,000 input + 300 output tokens, catalogue list prices), per million lines:',
    '',
    head(['model', 'gateway-run', 'native (50 % off tokens)', 'native saves']),
    ...g.batchLine.map(
      (b) =>
        `| ${b.provider}/${b.model} | ${usd(b.gatewayRun.usdPerMillionLines)} (infrastructure ${usd(b.gatewayRun.usdPerMillionLines - b.tokensUsd * 1e6)}) | ${usd(b.native.usdPerMillionLines)} (infrastructure ${usd(b.native.usdPerMillionLines - b.tokensUsd * 0.5 * 1e6)}) | ${Math.round((100 * (b.gatewayRun.usdPerMillionLines - b.native.usdPerMillionLines)) / b.gatewayRun.usdPerMillionLines)} % |`,
    ),
  );
  return lines.join('\n');
}

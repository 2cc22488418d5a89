import { PRICES } from './prices';

/**
 * What one batch line costs (issue 35): run by the gateway (the batch-run worker sends it
 * through the pipeline: docs/batches.md, "The engine") or by the provider's own batch API
 * (its discount on tokens, and the gateway's small part: the files, a record per line, the
 * polls of one execution per batch). Token prices come in from the pricing catalogue the
 * gateway ships (bench/lib/cost-growth.ts reads them), never written here.
 */
export interface BatchLineInputs {
  /** The line's tokens at the provider's list price, USD. */
  tokensUsd: number;
  /** The provider's discount on batch tokens (OpenAI, Anthropic, Bedrock, Vertex: 0.5). */
  nativeDiscount: number;
  providerLatencyS: number;
  /** batch-run worker memory (MB) and lines it keeps in flight (GATEWAY_BATCH_CONCURRENCY). */
  workerMemoryMb: number;
  linesInFlight: number;
  /** Lines per chunk message (one worker invocation and one SQS FIFO message each). */
  linesPerChunk: number;
  /**
   * DynamoDB write units per line run by the gateway: its request-log record (1), the line
   * item and the batch's count in one transaction (2 x 2), its spend counter (1).
   */
  gatewayWriteUnitsPerLine: number;
  /** Bytes of the line in the input file plus its answer in the output file (kept `fileDays`). */
  lineBytes: number;
  fileDays: number;
  /** Native mode: lines per batch and the state transitions of the execution that submits, polls and collects it. */
  linesPerBatch: number;
  nativeTransitionsPerBatch: number;
  /** Native mode: write units per line (its record with the provider's price). */
  nativeWriteUnitsPerLine: number;
}

export interface BatchLineItem {
  name: string;
  usdPerMillionLines: number;
  detail: string;
}

export interface BatchLineCost {
  mode: 'gateway-run' | 'native';
  items: BatchLineItem[];
  usdPerMillionLines: number;
}

const MILLION = 1_000_000;
const total = (items: BatchLineItem[]) => items.reduce((n, i) => n + i.usdPerMillionLines, 0);

function fileItems(b: BatchLineInputs): BatchLineItem[] {
  const gbMonths = ((b.lineBytes / 1e9) * b.fileDays) / 30;
  return [
    {
      name: 'S3 (files and requests)',
      usdPerMillionLines: MILLION * gbMonths * PRICES.s3StandardPerGbMonth.usd + (MILLION / b.linesPerChunk) * (PRICES.s3GetPerThousand.usd / 1000) * 2,
      detail: `${b.lineBytes} B kept ${b.fileDays} days × $${PRICES.s3StandardPerGbMonth.usd}/GB-month; a range read per chunk`,
    },
  ];
}

export function gatewayRunLineCost(b: BatchLineInputs): BatchLineCost {
  const gbSeconds = (b.providerLatencyS * b.workerMemoryMb) / 1024 / b.linesInFlight;
  const items: BatchLineItem[] = [
    { name: 'Provider tokens', usdPerMillionLines: b.tokensUsd * MILLION, detail: `list price, $${b.tokensUsd} a line` },
    {
      name: 'Worker duration',
      usdPerMillionLines: gbSeconds * MILLION * PRICES.lambdaArmGbSecond.usd,
      detail: `${b.providerLatencyS} s × ${b.workerMemoryMb} MB shared by ${b.linesInFlight} lines in flight`,
    },
    {
      name: 'Worker requests and SQS',
      usdPerMillionLines: (MILLION / b.linesPerChunk) * (PRICES.lambdaRequestsPerMillion.usd / MILLION + (3 * PRICES.sqsFifoPerMillion.usd) / MILLION),
      detail: `one invocation and 3 FIFO requests per chunk of ${b.linesPerChunk}`,
    },
    {
      name: 'DynamoDB writes',
      usdPerMillionLines: b.gatewayWriteUnitsPerLine * PRICES.dynamoWriteRequestUnitsPerMillion.usd,
      detail: `${b.gatewayWriteUnitsPerLine} WRU a line (record, line item + count transaction, spend counter)`,
    },
    ...fileItems(b),
  ];
  return { mode: 'gateway-run', items, usdPerMillionLines: total(items) };
}

export function nativeLineCost(b: BatchLineInputs): BatchLineCost {
  const items: BatchLineItem[] = [
    {
      name: 'Provider tokens',
      usdPerMillionLines: b.tokensUsd * (1 - b.nativeDiscount) * MILLION,
      detail: `list price less the ${b.nativeDiscount * 100} % batch discount`,
    },
    {
      name: 'Step Functions (submit, poll, collect)',
      usdPerMillionLines: ((b.nativeTransitionsPerBatch * PRICES.stepFunctionsPerThousandTransitions.usd) / 1000 / b.linesPerBatch) * MILLION,
      detail: `${b.nativeTransitionsPerBatch} transitions a batch of ${b.linesPerBatch} lines`,
    },
    {
      name: 'DynamoDB writes',
      usdPerMillionLines: b.nativeWriteUnitsPerLine * PRICES.dynamoWriteRequestUnitsPerMillion.usd,
      detail: `${b.nativeWriteUnitsPerLine} WRU a line (its record)`,
    },
    ...fileItems({ ...b, lineBytes: b.lineBytes * 2 }),
  ];
  return { mode: 'native', items, usdPerMillionLines: total(items) };
}

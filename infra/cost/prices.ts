/**
 * AWS list prices the cost model (infra/cost/model.ts) multiplies, in one place so that a
 * price change is one edit. US East (N. Virginia), on-demand, no free tier, no Savings
 * Plans, USD. Each price names where it comes from and when it was read; update the date
 * with the number.
 */
export const PRICES_AS_OF = '2026-11-25';
export const REGION = 'us-east-1';

export interface Price {
  usd: number;
  unit: string;
  source: string;
}

const p = (usd: number, unit: string, source: string): Price => ({ usd, unit, source });

export const PRICES = {
  /** REST APIs, first 333 million requests a month (streamed responses are billed the same per request). */
  apiGatewayRestPerMillion: p(3.5, 'per million requests', 'https://aws.amazon.com/api-gateway/pricing/ (REST APIs, first 333 million)'),
  /** Lambda requests, on demand and on managed instances alike. */
  lambdaRequestsPerMillion: p(
    0.2,
    'per million requests',
    'https://aws.amazon.com/lambda/pricing/ (Requests; also the Lambda Managed Instances request charge)',
  ),
  /** Lambda duration on arm64, first 7.5 billion GB-seconds a month. */
  lambdaArmGbSecond: p(0.0000133334, 'per GB-second (arm64)', 'https://aws.amazon.com/lambda/pricing/ (Duration, Arm price, first 7.5 billion GB-s)'),
  /** Lambda Managed Instances: a fee on top of the EC2 on-demand price of the instances. */
  managedInstancesFeeRate: p(
    0.15,
    'fraction of the EC2 on-demand instance price',
    'https://aws.amazon.com/lambda/pricing/ (Lambda Managed Instances, compute management fee: 15% premium on the EC2 on-demand instance price)',
  ),
  /** DynamoDB on demand (prices after the November 2024 reduction). */
  dynamoWriteRequestUnitsPerMillion: p(0.625, 'per million write request units', 'https://aws.amazon.com/dynamodb/pricing/on-demand/ (Standard table class)'),
  dynamoReadRequestUnitsPerMillion: p(0.125, 'per million read request units', 'https://aws.amazon.com/dynamodb/pricing/on-demand/ (Standard table class)'),
  /** CloudWatch Logs ingestion (Lambda logs are vended logs: this is their first tier). */
  cloudWatchLogsIngestionPerGb: p(0.5, 'per GB ingested', 'https://aws.amazon.com/cloudwatch/pricing/ (Logs, collect; Lambda vended logs first 10 TB)'),
  /** EMF lines are log bytes (above) and create custom metrics, billed per metric-month. */
  cloudWatchCustomMetricPerMonth: p(0.3, 'per metric per month', 'https://aws.amazon.com/cloudwatch/pricing/ (Metrics, first 10,000 metrics)'),
  /** Standard workflows. */
  stepFunctionsPerThousandTransitions: p(0.025, 'per 1,000 state transitions', 'https://aws.amazon.com/step-functions/pricing/ (Standard workflows)'),
  /** FIFO queues (the runs queue); each message is sent, received and deleted: three requests. */
  sqsFifoPerMillion: p(0.5, 'per million requests (64 KB chunks)', 'https://aws.amazon.com/sqs/pricing/ (FIFO queues)'),
  /** New VPC of managed-instances mode: NAT gateway hours and data processed. */
  natGatewayHour: p(0.045, 'per NAT gateway-hour', 'https://aws.amazon.com/vpc/pricing/ (NAT gateway)'),
  natGatewayPerGb: p(0.045, 'per GB processed', 'https://aws.amazon.com/vpc/pricing/ (NAT gateway)'),
} as const satisfies Record<string, Price>;

export interface InstancePrice {
  vcpus: number;
  memoryGiB: number;
  /** EC2 Linux on-demand, per hour. */
  usdPerHour: number;
}

/**
 * EC2 on-demand Linux prices of the Graviton types the capacity provider may launch
 * (https://aws.amazon.com/ec2/pricing/on-demand/, us-east-1). The cost model refuses an
 * instance type that is not listed here rather than guess its price.
 */
export const EC2_INSTANCE_PRICES: Readonly<Record<string, InstancePrice>> = {
  'c7g.large': { vcpus: 2, memoryGiB: 4, usdPerHour: 0.0725 },
  'c7g.xlarge': { vcpus: 4, memoryGiB: 8, usdPerHour: 0.145 },
  'c7g.2xlarge': { vcpus: 8, memoryGiB: 16, usdPerHour: 0.29 },
  'm7g.large': { vcpus: 2, memoryGiB: 8, usdPerHour: 0.0816 },
  'm7g.xlarge': { vcpus: 4, memoryGiB: 16, usdPerHour: 0.1632 },
  'm7g.2xlarge': { vcpus: 8, memoryGiB: 32, usdPerHour: 0.3264 },
};

/**
 * Facts of the Lambda service the model relies on, with their source.
 * - One full vCPU at 1,769 MB; below that, CPU share in proportion to memory
 *   (https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html).
 * - Managed instances: three execution environments (and instances) by default for AZ
 *   resiliency (https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-scaling.html).
 * - One vCPU and 1 GiB of each instance are kept for the OS and the Lambda agent
 *   (AWS's Lambda Managed Instances guidance, aws/agent-toolkit-for-aws,
 *   skills/.../aws-lambda-managed-instances/SKILL.md, "Instance Sizing").
 */
export const LAMBDA_FACTS = {
  fullVcpuMemoryMb: 1769,
  managedInstancesMinInstances: 3,
  instanceReservedVcpus: 1,
  instanceReservedMemoryGiB: 1,
} as const;

export const HOURS_PER_MONTH = 730;

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
  /** CloudFront pay-as-you-go, United States, Mexico and Canada edge: $0.0100 per 10,000 HTTPS requests. */
  cloudFrontHttpsPerMillion: p(1.0, 'per million HTTPS requests', 'https://aws.amazon.com/cloudfront/pricing/ (pay-as-you-go, HTTPS requests, United States)'),
  cloudFrontDataOutPerGb: p(
    0.085,
    'per GB to the internet',
    'https://aws.amazon.com/cloudfront/pricing/ (data transfer out to internet, United States, first 10 TB)',
  ),
  /** What API Gateway and Lambda function URLs pay for answer bytes: the Region's data transfer out to the internet. */
  dataTransferOutPerGb: p(0.09, 'per GB to the internet', 'https://aws.amazon.com/ec2/pricing/on-demand/ (Data Transfer OUT to Internet, first 10 TB a month)'),
  /** AWS WAF: web ACL and rule fees per month, and requests inspected. */
  wafWebAclPerMonth: p(5, 'per web ACL per month', 'https://aws.amazon.com/waf/pricing/ (web ACL)'),
  wafRulePerMonth: p(
    1,
    'per rule or managed rule group per month',
    'https://aws.amazon.com/waf/pricing/ (rule; the AWS common rule set is a rule group without a subscription fee)',
  ),
  wafRequestsPerMillion: p(0.6, 'per million requests', 'https://aws.amazon.com/waf/pricing/ (requests, up to 1,500 WCU and default body inspection)'),
  /** DynamoDB storage and continuous backups (point-in-time recovery), Standard table class. */
  dynamoStoragePerGbMonth: p(0.25, 'per GB-month', 'https://aws.amazon.com/dynamodb/pricing/on-demand/ (data storage, Standard)'),
  dynamoPitrPerGbMonth: p(0.2, 'per GB-month', 'https://aws.amazon.com/dynamodb/pricing/on-demand/ (continuous backups, point-in-time recovery)'),
  /** KMS: symmetric requests (Decrypt of the provider credentials). */
  kmsRequestsPerMillion: p(3, 'per million requests ($0.03 per 10,000)', 'https://aws.amazon.com/kms/pricing/ (symmetric requests)'),
  /** X-Ray: traces recorded (active tracing samples them: 1 a second and 5 % of the rest by default). */
  xrayTracesRecordedPerMillion: p(5, 'per million traces recorded', 'https://aws.amazon.com/xray/pricing/ (traces recorded)'),
  /** S3 Standard: batch input and output files. */
  s3StandardPerGbMonth: p(0.023, 'per GB-month', 'https://aws.amazon.com/s3/pricing/ (S3 Standard, first 50 TB)'),
  s3PutPerThousand: p(0.005, 'per 1,000 PUT, COPY, POST, LIST requests', 'https://aws.amazon.com/s3/pricing/ (requests, S3 Standard)'),
  s3GetPerThousand: p(0.0004, 'per 1,000 GET and other requests', 'https://aws.amazon.com/s3/pricing/ (requests, S3 Standard)'),
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

/**
 * AWS quotas the scale table (infra/cost/scale.ts) checks, defaults of a new account in
 * us-east-1 (the same numbers as docs/deploy.md's quota table).
 */
export const QUOTAS = {
  /** Lambda concurrent executions, account and Region (Service Quotas L-B99A9384). */
  lambdaConcurrency: 1000,
  /** API Gateway REST throttle, account and Region, requests per second. */
  apiGatewayAccountRps: 10_000,
  /** The stage throttle this stack sets (STAGE_THROTTLING in infra/stacks/api-stack.ts). */
  apiGatewayStageRps: 1000,
  /** DynamoDB write capacity of one partition (one partition key), WCU. */
  dynamoPartitionWcu: 1000,
  /** KMS symmetric cryptographic requests per second (5,500 in most Regions; 10,000 or 50,000 in some). */
  kmsRps: 5500,
  /** Lambda function URL: no request-rate quota of its own; concurrency binds. CloudFront: 250,000 req/s per distribution. */
  cloudFrontRps: 250_000,
} as const;

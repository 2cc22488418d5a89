import { CfnOutput, Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import {
  AllowedMethods,
  CachePolicy,
  Distribution,
  HttpVersion,
  OriginRequestPolicy,
  ViewerProtocolPolicy,
  type BehaviorOptions,
} from 'aws-cdk-lib/aws-cloudfront';
import { FunctionUrlOrigin } from 'aws-cdk-lib/aws-cloudfront-origins';
import { MathExpression, Metric } from 'aws-cdk-lib/aws-cloudwatch';
import { FunctionUrlAuthType, InvokeMode, type FunctionUrl } from 'aws-cdk-lib/aws-lambda';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { FALLBACK_GROUP, type EndpointGroup } from '../endpoint-groups';
import type { EndpointFunction } from './endpoint-function';
import { pascal } from './names';

/** The public entrance: API Gateway REST (default) or one Lambda function URL per endpoint group. */
export type FrontDoor = 'api-gateway' | 'function-url';

/** CloudFront's default quota of cache behaviours per distribution (adjustable; the default behaviour not counted). */
export const MAX_CACHE_BEHAVIORS = 25;

/**
 * How long CloudFront waits for the first byte of an answer, and then between its packets: a
 * non-streamed answer that takes longer is a 504. 120 s is the most the default quota allows.
 */
export const ORIGIN_READ_TIMEOUT = Duration.seconds(120);

const REASONS = {
  cfr1: 'No geo restriction: the gateway serves API clients wherever its deployer runs them; per-key policies, the WAF rate rule and the web ACL the deployer attaches decide who may call.',
  cfr4: "The distribution uses CloudFront's default *.cloudfront.net certificate, whose viewer TLS policy CloudFront fixes; a custom domain with its own certificate (and TLSv1.2_2021) is the deployer's to add.",
  logBucketS1: "This bucket receives the distribution's standard access logs; logging it into itself (or a third bucket) would loop or only move the finding.",
} as const;

export interface FunctionUrlFrontDoorProps {
  stage: string;
  groups: readonly EndpointGroup[];
  functions: Readonly<Record<string, EndpointFunction>>;
  /** CloudFront in front (origin access control, a WAF web ACL); without it each group's URL is public. */
  cdn?: { webAclArn: string; logRetentionDays: number };
}

/**
 * `-c frontDoor=function-url`: every endpoint group's function answers at its own Lambda
 * function URL in RESPONSE_STREAM mode (no per-request front-door fee). The handlers are the
 * same: they read the URL's 2.0 events (functions/shared/http/request.ts), authenticate every
 * request themselves and write the same logs.
 *
 * With `cdn`, one CloudFront distribution is the single base URL: a behaviour per group
 * prefix (`/v1/<prefix>*`, `/<root>*`) to that group's URL, everything else to the gateway
 * group, caching off, every viewer header (but Host), query string and cookie passed on. The
 * URLs take only CloudFront's signed requests (AWS_IAM auth with origin access control), so
 * nobody can call around the distribution and its WAF web ACL.
 */
export class FunctionUrlFrontDoor extends Construct {
  readonly urls: Readonly<Record<string, FunctionUrl>>;
  readonly distribution?: Distribution;
  /** What an OpenAI SDK takes as baseURL. */
  readonly baseUrl: string;

  constructor(scope: Construct, id: string, props: FunctionUrlFrontDoorProps) {
    super(scope, id);
    const authType = props.cdn ? FunctionUrlAuthType.AWS_IAM : FunctionUrlAuthType.NONE;
    const urls: Record<string, FunctionUrl> = {};
    for (const group of props.groups) {
      const fn = props.functions[group.name];
      if (!fn) throw new Error(`No function for endpoint group '${group.name}'.`);
      urls[group.name] = fn.function.addFunctionUrl({ authType, invokeMode: InvokeMode.RESPONSE_STREAM });
    }
    this.urls = urls;

    if (!props.cdn) {
      this.baseUrl = `${urls[FALLBACK_GROUP]!.url}v1`;
      for (const group of props.groups) {
        new CfnOutput(this, `${pascal(group.name)}Url`, {
          value: urls[group.name]!.url,
          description: `Function URL of the ${group.name} group (${describePaths(group)}); without CloudFront each group has its own URL`,
        });
      }
      return;
    }

    const behavior = (url: FunctionUrl): BehaviorOptions => ({
      origin: FunctionUrlOrigin.withOriginAccessControl(url, { readTimeout: ORIGIN_READ_TIMEOUT, keepaliveTimeout: Duration.seconds(60) }),
      allowedMethods: AllowedMethods.ALLOW_ALL,
      viewerProtocolPolicy: ViewerProtocolPolicy.HTTPS_ONLY,
      cachePolicy: CachePolicy.CACHING_DISABLED,
      originRequestPolicy: OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
      // Streamed event streams must not wait for a compressor.
      compress: false,
    });
    const patterns = behaviorPatterns(props.groups);
    if (patterns.length > MAX_CACHE_BEHAVIORS) {
      throw new Error(
        `The endpoint groups need ${patterns.length} CloudFront cache behaviours; a distribution allows ${MAX_CACHE_BEHAVIORS} by default (raise the quota, then MAX_CACHE_BEHAVIORS).`,
      );
    }
    const behaviors = new Map<string, BehaviorOptions>();
    const logs = new Bucket(this, 'AccessLogs', {
      // CloudFront standard logs are written with an ACL: the bucket must accept object ACLs.
      objectOwnership: ObjectOwnership.OBJECT_WRITER,
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      lifecycleRules: [{ expiration: Duration.days(props.cdn.logRetentionDays) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(logs).acknowledge({ id: 'AwsSolutions-S1', reason: REASONS.logBucketS1 });
    const byGroup = new Map<string, BehaviorOptions>();
    const behaviorOf = (group: string) => byGroup.get(group) ?? byGroup.set(group, behavior(urls[group]!)).get(group)!;
    for (const { pattern, group } of patterns) behaviors.set(pattern, behaviorOf(group));
    this.distribution = new Distribution(this, 'Distribution', {
      comment: `AI gateway (${props.stage}): one base URL over the endpoint groups' function URLs`,
      defaultBehavior: behaviorOf(FALLBACK_GROUP),
      additionalBehaviors: Object.fromEntries(behaviors),
      httpVersion: HttpVersion.HTTP2_AND_3,
      webAclId: props.cdn.webAclArn,
      enableLogging: true,
      logBucket: logs,
      logFilePrefix: 'cloudfront/',
    });
    Validations.of(this.distribution).acknowledge({ id: 'AwsSolutions-CFR1', reason: REASONS.cfr1 });
    Validations.of(this.distribution).acknowledge({ id: 'AwsSolutions-CFR4', reason: REASONS.cfr4 });
    this.baseUrl = `https://${this.distribution.distributionDomainName}/v1`;
  }
}

/**
 * CloudFront path patterns of the non-fallback groups, longest first (CloudFront takes the
 * first match): `/v1/<prefix>*` covers the prefix and everything under it, as the REST API's
 * resource and its `{proxy+}` child do.
 */
export function behaviorPatterns(groups: readonly EndpointGroup[]): Array<{ pattern: string; group: string }> {
  const out: Array<{ pattern: string; group: string }> = [];
  for (const group of groups) {
    if (group.name === FALLBACK_GROUP) continue;
    for (const prefix of group.prefixes) out.push({ pattern: `/v1/${prefix}*`, group: group.name });
    for (const root of group.roots ?? []) out.push({ pattern: `/${root}*`, group: group.name });
  }
  return out.sort((a, b) => b.pattern.length - a.pattern.length);
}

const describePaths = (group: EndpointGroup) =>
  group.name === FALLBACK_GROUP
    ? 'every path no other group owns'
    : [...group.prefixes.map((p) => `/v1/${p}`), ...(group.roots ?? []).map((r) => `/${r}`)].join(', ');

/**
 * What the observability stack reads for the front door when it is function URLs: Lambda's
 * per-URL metrics (AWS/Lambda UrlRequestCount, Url4xxCount, Url5xxCount, UrlRequestLatency by
 * function), summed over the groups. Behind CloudFront they count what reached the origins;
 * CloudFront's and WAF's own metrics live in us-east-1 only. The sums are for the dashboard.
 */
export function functionUrlMetrics(functionNames: readonly string[], gatewayFunctionName: string, period: Duration) {
  // Metric ids must be unique across the expressions an alarm nests: each sum has its own.
  const sum = (metricName: string, label: string, id: string): MathExpression =>
    new MathExpression({
      expression: `SUM([${functionNames.map((_, i) => `${id}${i}`).join(',')}])`,
      usingMetrics: Object.fromEntries(
        functionNames.map((name, i) => [
          `${id}${i}`,
          new Metric({ namespace: 'AWS/Lambda', metricName, dimensionsMap: { FunctionName: name }, statistic: 'Sum', period }),
        ]),
      ),
      label,
      period,
    });
  const gateway = (metricName: string, statistic: string, label: string) =>
    new Metric({ namespace: 'AWS/Lambda', metricName, dimensionsMap: { FunctionName: gatewayFunctionName }, statistic, period, label });
  const latency = (statistic: string, label: string) => gateway('UrlRequestLatency', statistic, label);
  return {
    // An alarm's math takes at most 10 metrics: the 5XX-rate alarm reads the gateway group's
    // URL (the inference traffic); the other groups' crashes alarm as lambda-errors-*.
    alarm: { requests: gateway('UrlRequestCount', 'Sum', 'gateway requests'), serverErrors: gateway('Url5xxCount', 'Sum', 'gateway 5XX') },
    requests: sum('UrlRequestCount', 'requests', 'req'),
    serverErrors: sum('Url5xxCount', '5XX', 'err5xx'),
    clientErrors: sum('Url4xxCount', '4XX', 'err4xx'),
    latency: [latency('p50', 'gateway URL latency p50'), latency('p99', 'gateway URL latency p99')],
  };
}

import { Match, Template } from 'aws-cdk-lib/assertions';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { describe, expect, it } from 'vitest';
import { ENDPOINT_GROUPS, FALLBACK_GROUP, groupForPath } from '../../infra/endpoint-groups';
import { COUNTED_BODY_RULES } from '../../infra/stacks/edge-waf-stack';
import { behaviorPatterns, MAX_CACHE_BEHAVIORS } from '../../infra/stacks/front-door';
import { buildApp, resolveOptions, type GatewayAppOptions } from '../../infra/stacks/index';
import { testApp } from '../support/cdk-app';

/**
 * `-c frontDoor=function-url` (issue 38 item 4): one streaming function URL per endpoint group,
 * optionally behind CloudFront with origin access control and a WAF web ACL from us-east-1;
 * cdk-nag runs on every synthesis here (a finding throws).
 */
const WAF_ARN = 'arn:aws:wafv2:us-east-1:123456789012:global/webacl/ai-gateway-test-edge/0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0';
const BASE = { stage: 'test', logRetentionDays: RetentionDays.TWO_WEEKS, memorySize: 1024 } as const;

function synth(options: Partial<GatewayAppOptions>) {
  const app = testApp({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stacks = buildApp(app, { ...BASE, ...options });
  app.synth();
  return { stacks, api: Template.fromStack(stacks.api), observability: Template.fromStack(stacks.observability) };
}

describe('front door options', () => {
  it('defaults to API Gateway and validates the function-URL settings, naming them', () => {
    expect(resolveOptions({}).frontDoor).toBeUndefined();
    expect(resolveOptions({ frontDoor: 'function-url' }).frontDoor).toBe('function-url');
    expect(resolveOptions({ frontDoor: 'function-url', frontDoorCdn: 'true', wafArn: WAF_ARN })).toMatchObject({ frontDoorCdn: true, wafArn: WAF_ARN });
    expect(() => resolveOptions({ frontDoor: 'alb' })).toThrow(/'frontDoor' must be 'api-gateway' or 'function-url'/);
    expect(() => resolveOptions({ frontDoorCdn: 'true', wafArn: WAF_ARN })).toThrow(/frontDoor=function-url/);
    expect(() => resolveOptions({ frontDoor: 'function-url', frontDoorCdn: 'true' })).toThrow(/needs 'wafArn'.*us-east-1.*EdgeWaf/);
    expect(() => resolveOptions({ frontDoor: 'function-url', frontDoorCdn: 'true', wafArn: WAF_ARN.replace('us-east-1', 'eu-west-1') })).toThrow(
      /CLOUDFRONT-scope/,
    );
    expect(() => resolveOptions({ frontDoor: 'function-url', sso: { sso: 'cognito' } })).toThrow(/single sign-on.*API Gateway front door/);
    expect(resolveOptions({ edgeWaf: 'true' }).edgeWaf).toEqual({ rateLimitPer5Minutes: 20_000 });
    expect(() => resolveOptions({ edgeWaf: 'true', wafRateLimit: '5' })).toThrow(/'wafRateLimit' must be an integer between 10/);
  });
});

describe('function URLs without CloudFront', () => {
  const { stacks, api, observability } = synth({ frontDoor: 'function-url', corsOrigins: 'https://app.example.com,http://localhost:3000' });

  it('hands the CORS origins from context to every endpoint function (functions/shared/http/cors.ts)', () => {
    const functions = Object.values(api.findResources('AWS::Lambda::Function'));
    expect(functions).toHaveLength(ENDPOINT_GROUPS.length);
    for (const fn of functions) {
      expect(fn.Properties.Environment.Variables.CORS_ALLOWED_ORIGINS).toBe('https://app.example.com,http://localhost:3000');
    }
    // The functions answer preflights themselves: no CORS settings on the URLs, which would add a second set of headers.
    for (const url of Object.values(api.findResources('AWS::Lambda::Url'))) expect(url.Properties.Cors).toBeUndefined();
  });

  it('gives every group a public, response-streaming function URL and no REST API', () => {
    api.resourceCountIs('AWS::ApiGateway::RestApi', 0);
    api.resourceCountIs('AWS::Lambda::Url', ENDPOINT_GROUPS.length);
    api.allResourcesProperties('AWS::Lambda::Url', { AuthType: 'NONE', InvokeMode: 'RESPONSE_STREAM' });
    // Callers need the public invoke permissions a NONE URL requires.
    api.hasResourceProperties('AWS::Lambda::Permission', { Action: 'lambda:InvokeFunctionUrl', Principal: '*', FunctionUrlAuthType: 'NONE' });
    expect(stacks.api.restApi).toBeUndefined();
    const outputs = api.findOutputs('BaseUrl');
    expect(JSON.stringify(outputs)).toContain('FunctionUrl');
  });

  it("alarms on the URLs' 5XX share and drops the API Gateway throttle alarm (Lambda throttles alarm instead)", () => {
    const alarms = observability.findResources('AWS::CloudWatch::Alarm');
    const names = Object.values(alarms).map((a) => JSON.stringify(a.Properties.AlarmName));
    expect(names.some((n) => n.includes('api-5xx-rate'))).toBe(true);
    expect(names.some((n) => n.includes('api-throttled'))).toBe(false);
    const rate = Object.values(alarms).find((a) => JSON.stringify(a.Properties.AlarmName).includes('api-5xx-rate'))!;
    const json = JSON.stringify(rate.Properties.Metrics);
    expect(json).toContain('Url5xxCount');
    expect(json).toContain('UrlRequestCount');
    expect(json).not.toContain('AWS/ApiGateway');
  });

  it('runs on Lambda Managed Instances too (unqualified URL invokes reach $LATEST.PUBLISHED)', () => {
    const mi = synth({
      frontDoor: 'function-url',
      capacity: 'managed-instances',
      managedInstances: resolveOptions({ capacity: 'managed-instances' }).managedInstances!,
    });
    mi.api.resourceCountIs('AWS::Lambda::Url', ENDPOINT_GROUPS.length);
    mi.api.resourceCountIs('AWS::Lambda::CapacityProvider', 1);
  });
});

describe('function URLs behind CloudFront', () => {
  const { api } = synth({ frontDoor: 'function-url', frontDoorCdn: true, wafArn: WAF_ARN });

  it('signs every origin request (AWS_IAM URLs with origin access control), so the URLs cannot be called around it', () => {
    api.allResourcesProperties('AWS::Lambda::Url', { AuthType: 'AWS_IAM', InvokeMode: 'RESPONSE_STREAM' });
    api.resourceCountIs('AWS::CloudFront::OriginAccessControl', ENDPOINT_GROUPS.length);
    api.hasResourceProperties('AWS::CloudFront::OriginAccessControl', {
      OriginAccessControlConfig: Match.objectLike({ OriginAccessControlOriginType: 'lambda', SigningBehavior: 'always', SigningProtocol: 'sigv4' }),
    });
    // Only this distribution may invoke, through the URL.
    api.hasResourceProperties('AWS::Lambda::Permission', { Action: 'lambda:InvokeFunctionUrl', Principal: 'cloudfront.amazonaws.com' });
    expect(JSON.stringify(api.findResources('AWS::Lambda::Permission'))).not.toContain('"Principal":"*"');
  });

  it('routes each group prefix to its URL, everything else to the gateway group, uncached, with the web ACL and access logs', () => {
    const dist = Object.values(api.findResources('AWS::CloudFront::Distribution'))[0]!.Properties.DistributionConfig;
    expect(dist.WebACLId).toBe(WAF_ARN);
    expect(dist.Logging).toBeDefined();
    const patterns = behaviorPatterns(ENDPOINT_GROUPS);
    expect(dist.CacheBehaviors.map((b: { PathPattern: string }) => b.PathPattern)).toEqual(patterns.map((p) => p.pattern));
    for (const b of [dist.DefaultCacheBehavior, ...dist.CacheBehaviors]) {
      expect(b).toMatchObject({ ViewerProtocolPolicy: 'https-only', Compress: false });
      expect(b.AllowedMethods).toContain('POST');
      // Managed CachingDisabled and AllViewerExceptHostHeader policies.
      expect(b.CachePolicyId).toBe('4135ea2d-6df8-44a3-9df3-4b5a84be39ad');
      expect(b.OriginRequestPolicyId).toBe('b689b0a8-53d0-40ab-baf2-68738e2966ac');
    }
    const baseUrl = JSON.stringify(api.findOutputs('BaseUrl'));
    expect(baseUrl).toContain('DomainName');
  });

  it('sends every path pattern to the group the local runtime routes it to', () => {
    const firstMatch = (path: string) => {
      const hit = behaviorPatterns(ENDPOINT_GROUPS).find((p) => path.startsWith(p.pattern.slice(0, -1)));
      return hit?.group ?? FALLBACK_GROUP;
    };
    for (const path of [
      '/v1/chat/completions',
      '/v1/prompts/p1/versions',
      '/v1/mcp',
      '/v1/mcp-servers/x',
      '/console/',
      '/v1/prices',
      '/v1beta/models/x',
      '/v1/files',
    ]) {
      expect(firstMatch(path), path).toBe(groupForPath(path));
    }
    expect(behaviorPatterns(ENDPOINT_GROUPS).length).toBeLessThanOrEqual(MAX_CACHE_BEHAVIORS);
  });
});

describe('the us-east-1 web ACL (edgeWaf)', () => {
  it('is a CLOUDFRONT-scope ACL in us-east-1: the common rule set with its body rules counted, and a 429 rate rule in the OpenAI error shape', () => {
    const { stacks } = synth({ edgeWaf: { rateLimitPer5Minutes: 5000 } });
    expect(stacks.edgeWaf!.region).toBe('us-east-1');
    const waf = Template.fromStack(stacks.edgeWaf!);
    const acl = Object.values(waf.findResources('AWS::WAFv2::WebACL'))[0]!.Properties;
    expect(acl.Scope).toBe('CLOUDFRONT');
    const common = acl.Rules.find((r: { Name: string }) => r.Name === 'AwsCommonRuleSet');
    expect(common.Statement.ManagedRuleGroupStatement.Name).toBe('AWSManagedRulesCommonRuleSet');
    expect(common.Statement.ManagedRuleGroupStatement.RuleActionOverrides.map((o: { Name: string }) => o.Name)).toEqual([...COUNTED_BODY_RULES]);
    const rate = acl.Rules.find((r: { Name: string }) => r.Name === 'RatePerAddress');
    expect(rate.Statement.RateBasedStatement).toMatchObject({ Limit: 5000, AggregateKeyType: 'IP' });
    expect(rate.Action.Block.CustomResponse.ResponseCode).toBe(429);
    const body = JSON.parse(acl.CustomResponseBodies.rateLimited.Content);
    expect(body.error).toMatchObject({ type: 'rate_limit_error', param: null, code: 'rate_limited' });
  });
});

import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import { CfnWebACL } from 'aws-cdk-lib/aws-wafv2';
import type { Construct } from 'constructs';

/** Requests one client address may send in 5 minutes before the rate rule answers 429 (default 20,000: ~66 a second). */
export const DEFAULT_WAF_RATE_LIMIT = 20_000;

/**
 * Rules of the common rule set that read the request body. A model request's body is a
 * prompt: code, HTML, URLs and file paths are ordinary there, and bodies pass 8 KB routinely
 * (SizeRestrictions_BODY), so these only count; the gateway validates every body itself and
 * guards every outbound URL (SSRF).
 */
export const COUNTED_BODY_RULES = ['SizeRestrictions_BODY', 'CrossSiteScripting_BODY', 'GenericLFI_BODY', 'GenericRFI_BODY', 'EC2MetaDataSSRF_BODY'] as const;

const RATE_LIMITED_BODY = JSON.stringify({
  error: { message: 'Too many requests from this address; retry later.', type: 'rate_limit_error', param: null, code: 'rate_limited' },
});

export interface EdgeWafStackProps extends StackProps {
  stage: string;
  rateLimitPer5Minutes: number;
}

/**
 * `-c edgeWaf=true`: the AWS WAF web ACL for the CloudFront front door. A web ACL that
 * CloudFront uses has the CLOUDFRONT scope, which exists in us-east-1 only, so this stack is
 * pinned there (buildApp) while the others stay environment-agnostic: deploy it first and
 * hand its `WebAclArn` output to `-c frontDoorCdn=true -c wafArn=...` (any existing
 * CLOUDFRONT-scope web ACL works as well).
 *
 * Rules: AWS's managed common rule set (its body rules counted, see COUNTED_BODY_RULES) and a
 * rate-based rule per client address answering 429 in the OpenAI error shape.
 */
export class EdgeWafStack extends Stack {
  readonly webAcl: CfnWebACL;

  constructor(scope: Construct, id: string, props: EdgeWafStackProps) {
    super(scope, id, props);
    const visibility = (metricName: string) => ({ cloudWatchMetricsEnabled: true, sampledRequestsEnabled: true, metricName });
    this.webAcl = new CfnWebACL(this, 'WebAcl', {
      name: `ai-gateway-${props.stage}-edge`,
      description: `AI gateway ${props.stage} - CloudFront front door`,
      scope: 'CLOUDFRONT',
      defaultAction: { allow: {} },
      visibilityConfig: visibility(`ai-gateway-${props.stage}-edge`),
      customResponseBodies: { rateLimited: { contentType: 'APPLICATION_JSON', content: RATE_LIMITED_BODY } },
      rules: [
        {
          name: 'AwsCommonRuleSet',
          priority: 0,
          overrideAction: { none: {} },
          statement: {
            managedRuleGroupStatement: {
              vendorName: 'AWS',
              name: 'AWSManagedRulesCommonRuleSet',
              ruleActionOverrides: COUNTED_BODY_RULES.map((name) => ({ name, actionToUse: { count: {} } })),
            },
          },
          visibilityConfig: visibility('aws-common-rule-set'),
        },
        {
          name: 'RatePerAddress',
          priority: 1,
          action: { block: { customResponse: { responseCode: 429, customResponseBodyKey: 'rateLimited' } } },
          statement: { rateBasedStatement: { limit: props.rateLimitPer5Minutes, aggregateKeyType: 'IP', evaluationWindowSec: 300 } },
          visibilityConfig: visibility('rate-per-address'),
        },
      ],
    });
    new CfnOutput(this, 'WebAclArn', {
      value: this.webAcl.attrArn,
      description: 'CLOUDFRONT-scope web ACL: deploy with -c frontDoor=function-url -c frontDoorCdn=true -c wafArn=<this>',
    });
  }
}

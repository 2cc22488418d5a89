import { Validations } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

/**
 * cdk-nag 3 acknowledgements. Each one sits on the narrowest construct it concerns and
 * says why the finding is accepted; anything not listed here fails synthesis.
 */
export const REASONS = {
  'AwsSolutions-APIG2':
    'Every function validates its input with zod and answers in the OpenAI error shape; an API Gateway request validator would reply in its own shape and cannot describe the pass-through bodies of the generic proxy.',
  'AwsSolutions-APIG3':
    'No WAF web ACL by default: it is an account-level, billed choice for the team that deploys the gateway. The gateway enforces per-key rate-limit policies itself and the stage has default throttling; a WebACL can be associated with the stage without changing this stack.',
  'AwsSolutions-APIG4':
    'The gateway authenticates every request itself: x-gateway-api-key is checked against SHA-256 hashes in the control table with per-route scopes, because OpenAI-compatible clients send exactly that header and an authorizer would add a hop to the streaming hot path.',
  'AwsSolutions-COG4':
    'Callers are OpenAI-SDK clients holding gateway API keys, not Cognito users; the gateway authenticates every request itself with x-gateway-api-key (hashed keys, scopes per route).',
  'AwsSolutions-APIG6':
    'Execution logging needs the region-wide API Gateway CloudWatch role (AWS::ApiGateway::Account), a singleton this stack should not take over in the deploying account; the stage writes access logs and every function writes JSON logs and the request log.',
  'AwsSolutions-L1':
    'nodejs22.x is chosen deliberately: it matches the toolchain the project is built and tested against (esbuild target node22); moving to a newer runtime is a tested upgrade, not an automatic one.',
  'AwsSolutions-S1':
    "This bucket is the destination of the files bucket's server access logs; logging it into itself (or a third bucket) would loop or only move the finding.",
  'AwsSolutions-IAM5[Resource::*]':
    'Active X-Ray tracing adds xray:PutTraceSegments and xray:PutTelemetryRecords, which support no resource-level permissions, so IAM requires Resource "*" for them; every other statement of this role names exact ARNs.',
} as const;

export type AcknowledgedRule = keyof typeof REASONS;

export function acknowledge(construct: IConstruct, ...ids: AcknowledgedRule[]): void {
  for (const id of ids) Validations.of(construct).acknowledge({ id, reason: REASONS[id] });
}

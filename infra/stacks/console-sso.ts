import { Aws, CfnOutput, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { AdvancedSecurityMode, CfnUserPoolGroup, FeaturePlan, Mfa, OAuthScope, UserPool, UserPoolClient } from 'aws-cdk-lib/aws-cognito';
import { Grant, type IGrantable } from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { ROLES } from '../../functions/shared/auth/roles';

/**
 * Single sign-on to the console (docs/console-sso.md) as the admin function's settings:
 * `-c sso=cognito` creates a Cognito user pool with a hosted sign-in domain, a public app
 * client (authorization code + PKCE, no secret) whose callback is the gateway's, and one
 * group per role, mapped to that role; `-c ssoIssuer=... -c ssoClientId=...` names any other
 * OpenID Connect issuer (Okta, Entra ID, Google), with `-c ssoRoleMap` and `-c ssoRoleClaim`;
 * a confidential client adds `-c ssoClientSecretArn`, the Secrets Manager secret holding its
 * client secret, which the admin function reads at run time (never in the template).
 */
export type SsoOption =
  | { kind: 'cognito' }
  | { kind: 'oidc'; issuer: string; clientId: string; clientSecretArn?: string; roleMap?: string; roleClaim?: string };

export class ConsoleSso extends Construct {
  /** The SSO_* settings of the admin function. */
  readonly environment: Record<string, string>;
  private readonly clientSecretArn: string | undefined;

  constructor(scope: Construct, id: string, props: { option: SsoOption; stage: string; callbackUrl: string }) {
    super(scope, id);
    const { option } = props;
    this.clientSecretArn = option.kind === 'oidc' ? option.clientSecretArn : undefined;
    if (option.kind === 'oidc') {
      this.environment = {
        SSO_ISSUER_URL: option.issuer,
        SSO_CLIENT_ID: option.clientId,
        ...(option.clientSecretArn ? { SSO_CLIENT_SECRET_ARN: option.clientSecretArn } : {}),
        SSO_REDIRECT_URL: props.callbackUrl,
        ...(option.roleMap ? { SSO_ROLE_MAP: option.roleMap } : {}),
        ...(option.roleClaim ? { SSO_ROLE_CLAIM: option.roleClaim } : {}),
      };
      return;
    }
    const pool = new UserPool(this, 'UserPool', {
      userPoolName: `ai-gateway-${props.stage}-console`,
      selfSignUpEnabled: false,
      signInAliases: { email: true },
      passwordPolicy: { minLength: 12, requireDigits: true, requireLowercase: true, requireUppercase: true, requireSymbols: true },
      mfa: Mfa.REQUIRED,
      mfaSecondFactor: { otp: true, sms: false },
      featurePlan: FeaturePlan.PLUS,
      advancedSecurityMode: AdvancedSecurityMode.ENFORCED,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const domain = pool.addDomain('Domain', { cognitoDomain: { domainPrefix: `ai-gateway-${props.stage}-${Stack.of(this).account}`.slice(0, 63) } });
    const client = new UserPoolClient(this, 'ConsoleClient', {
      userPool: pool,
      generateSecret: false,
      authFlows: {},
      oAuth: {
        flows: { authorizationCodeGrant: true },
        scopes: [OAuthScope.OPENID, OAuthScope.EMAIL, OAuthScope.PROFILE],
        callbackUrls: [props.callbackUrl],
      },
      idTokenValidity: Duration.hours(1),
      preventUserExistenceErrors: true,
    });
    for (const role of ROLES) {
      new CfnUserPoolGroup(this, `Group-${role}`, { userPoolId: pool.userPoolId, groupName: role, description: `AI gateway console: ${role}` });
    }
    this.environment = {
      SSO_ISSUER_URL: `https://cognito-idp.${Aws.REGION}.amazonaws.com/${pool.userPoolId}`,
      SSO_CLIENT_ID: client.userPoolClientId,
      SSO_REDIRECT_URL: props.callbackUrl,
      SSO_ROLE_CLAIM: 'cognito:groups',
      SSO_ROLE_MAP: JSON.stringify(Object.fromEntries(ROLES.map((role) => [role, role]))),
      SSO_LABEL: 'Sign in with Cognito',
    };
    new CfnOutput(this, 'ConsoleSignInDomain', { value: domain.baseUrl(), description: 'Cognito hosted sign-in of the console (add users to a role group)' });
  }

  /**
   * Lets the admin function read the client secret: GetSecretValue on exactly that secret. A
   * secret under a customer managed KMS key also needs that key's policy to allow the
   * function's role kms:Decrypt via Secrets Manager (docs/console-sso.md); no wildcard here.
   */
  grantClientSecret(grantee: IGrantable): void {
    if (!this.clientSecretArn) return;
    Grant.addToPrincipal({ grantee, actions: ['secretsmanager:GetSecretValue'], resourceArns: [this.clientSecretArn] });
  }
}

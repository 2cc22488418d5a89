import { Match, Template } from 'aws-cdk-lib/assertions';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { describe, expect, it } from 'vitest';
import { buildApp, optionsFromContext } from '../../infra/stacks/index';
import { testApp } from '../support/cdk-app';

// Console single sign-on on AWS (docs/console-sso.md): `-c sso=cognito` makes a user pool, a
// PKCE app client calling back to the gateway and a group per role, wired into the admin
// function's settings; cdk-nag finds nothing (synthesis throws on a finding).
const OPTIONS = { stage: 'test', logRetentionDays: RetentionDays.TWO_WEEKS, memorySize: 1024 };
const SECRET_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:ai-gateway/console-sso-AbC123';
const skipBundling = () => testApp({ context: { 'aws:cdk:bundling-stacks': [] } });

describe('console single sign-on (CDK)', () => {
  it('reads the sso context', () => {
    expect(optionsFromContext(testApp({ context: { sso: 'cognito' } })).sso).toEqual({ kind: 'cognito' });
    expect(optionsFromContext(testApp({ context: { ssoIssuer: 'https://example.okta.com/oauth2/default', ssoClientId: 'abc' } })).sso).toEqual({
      kind: 'oidc',
      issuer: 'https://example.okta.com/oauth2/default',
      clientId: 'abc',
    });
    expect(optionsFromContext(testApp()).sso).toBeUndefined();
    expect(() => optionsFromContext(testApp({ context: { sso: 'okta' } }))).toThrow(/'sso' must be 'cognito'/);
    expect(() => optionsFromContext(testApp({ context: { ssoIssuer: 'http://idp' } }))).toThrow(/ssoIssuer/);
  });

  it('reads -c ssoClientSecretArn: only with ssoIssuer, only a complete secret ARN', () => {
    const issuer = { ssoIssuer: 'https://accounts.google.com', ssoClientId: 'abc.apps.googleusercontent.com' };
    expect(optionsFromContext(testApp({ context: { ...issuer, ssoClientSecretArn: SECRET_ARN } })).sso).toEqual({
      kind: 'oidc',
      issuer: 'https://accounts.google.com',
      clientId: 'abc.apps.googleusercontent.com',
      clientSecretArn: SECRET_ARN,
    });
    expect(() => optionsFromContext(testApp({ context: { ssoClientSecretArn: SECRET_ARN } }))).toThrow(/'ssoClientSecretArn'.*'ssoIssuer'/);
    expect(() => optionsFromContext(testApp({ context: { sso: 'cognito', ssoClientSecretArn: SECRET_ARN } }))).toThrow(/'ssoClientSecretArn'/);
    for (const bad of [
      'console-client-secret',
      'arn:aws:secretsmanager:eu-west-1:123456789012:secret:gateway/sso', // partial ARN: no suffix, IAM would not match it
      'arn:aws:secretsmanager:eu-west-1:123456789012:secret:*',
      'arn:aws:kms:eu-west-1:123456789012:key/console-client-AbC123',
      'arn:aws:secretsmanager:eu-west-1:1234:secret:console-client-AbC123',
    ]) {
      expect(() => optionsFromContext(testApp({ context: { ...issuer, ssoClientSecretArn: bad } })), bad).toThrow(/complete ARN of a Secrets Manager secret/);
    }
  });

  it('-c ssoClientSecretArn: the admin function gets the ARN and GetSecretValue on exactly it, nothing else; cdk-nag clean', () => {
    const app = skipBundling();
    const stacks = buildApp(app, {
      ...OPTIONS,
      sso: { kind: 'oidc', issuer: 'https://accounts.google.com', clientId: 'abc.apps.googleusercontent.com', clientSecretArn: SECRET_ARN },
    });
    expect(() => app.synth()).not.toThrow();
    const api = Template.fromStack(stacks.api);
    api.resourceCountIs('AWS::Cognito::UserPool', 0);
    const adminFn = stacks.api.functions.admin!.function;
    const fn = api.findResources('AWS::Lambda::Function')[stacks.api.getLogicalId(adminFn.node.defaultChild as never)];
    expect(fn?.Properties.Environment.Variables).toMatchObject({ SSO_CLIENT_SECRET_ARN: SECRET_ARN, SSO_CLIENT_ID: 'abc.apps.googleusercontent.com' });
    expect(JSON.stringify(fn)).not.toContain('SSO_CLIENT_SECRET"');
    const statements = Object.values(api.findResources('AWS::IAM::Policy')).flatMap((p) =>
      (p.Properties.PolicyDocument.Statement as Array<{ Action: string | string[]; Resource: unknown }>).map((st) => ({ policy: p, st })),
    );
    const secretGrants = statements.filter(({ st }) => JSON.stringify(st.Action).includes('secretsmanager:'));
    expect(secretGrants.map(({ st }) => st)).toEqual([{ Action: 'secretsmanager:GetSecretValue', Effect: 'Allow', Resource: SECRET_ARN }]);
    const adminRole = stacks.api.getLogicalId(adminFn.role!.node.defaultChild as never);
    expect(secretGrants[0]!.policy.Properties.Roles).toEqual([{ Ref: adminRole }]);
  }, 240_000);

  it('without ssoClientSecretArn: no secret setting and no Secrets Manager grant', () => {
    const app = skipBundling();
    const stacks = buildApp(app, { ...OPTIONS, sso: { kind: 'oidc', issuer: 'https://example.okta.com', clientId: 'abc' } });
    const api = Template.fromStack(stacks.api);
    expect(JSON.stringify(api.toJSON())).not.toContain('SSO_CLIENT_SECRET_ARN');
    expect(JSON.stringify(api.findResources('AWS::IAM::Policy'))).not.toContain('secretsmanager:');
  }, 240_000);

  it('-c sso=cognito: a user pool, a PKCE client calling back to the gateway, role groups, the admin settings; cdk-nag clean', () => {
    const app = skipBundling();
    const stacks = buildApp(app, { ...OPTIONS, sso: { kind: 'cognito' } });
    expect(() => app.synth()).not.toThrow();
    const api = Template.fromStack(stacks.api);
    api.resourceCountIs('AWS::Cognito::UserPool', 1);
    api.hasResourceProperties('AWS::Cognito::UserPoolClient', {
      GenerateSecret: false,
      AllowedOAuthFlows: ['code'],
      AllowedOAuthScopes: Match.arrayWith(['openid', 'email']),
      CallbackURLs: [Match.objectLike({ 'Fn::Join': Match.arrayWith([Match.arrayWith(['/test/console/sso/callback'])]) })],
    });
    for (const role of ['org-admin', 'workspace-admin', 'member', 'viewer']) {
      api.hasResourceProperties('AWS::Cognito::UserPoolGroup', { GroupName: role });
    }
    const adminFn = stacks.api.functions.admin!.function;
    const fn = api.findResources('AWS::Lambda::Function');
    const env = JSON.stringify(fn[stacks.api.getLogicalId(adminFn.node.defaultChild as never)]);
    for (const name of ['SSO_ISSUER_URL', 'SSO_CLIENT_ID', 'SSO_REDIRECT_URL', 'SSO_ROLE_MAP']) expect(env).toContain(name);
    expect(env).toContain('cognito:groups');
  }, 240_000);
});

import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { describe, expect, it } from 'vitest';
import { buildApp, optionsFromContext } from '../../infra/stacks/index';

// Console single sign-on on AWS (docs/console-sso.md): `-c sso=cognito` makes a user pool, a
// PKCE app client calling back to the gateway and a group per role, wired into the admin
// function's settings; cdk-nag finds nothing (synthesis throws on a finding).
const OPTIONS = { stage: 'test', logRetentionDays: RetentionDays.TWO_WEEKS, memorySize: 1024 };
const skipBundling = () => new App({ context: { 'aws:cdk:bundling-stacks': [] } });

describe('console single sign-on (CDK)', () => {
  it('reads the sso context', () => {
    expect(optionsFromContext(new App({ context: { sso: 'cognito' } })).sso).toEqual({ kind: 'cognito' });
    expect(optionsFromContext(new App({ context: { ssoIssuer: 'https://example.okta.com/oauth2/default', ssoClientId: 'abc' } })).sso).toEqual({
      kind: 'oidc',
      issuer: 'https://example.okta.com/oauth2/default',
      clientId: 'abc',
    });
    expect(optionsFromContext(new App()).sso).toBeUndefined();
    expect(() => optionsFromContext(new App({ context: { sso: 'okta' } }))).toThrow(/'sso' must be 'cognito'/);
    expect(() => optionsFromContext(new App({ context: { ssoIssuer: 'http://idp' } }))).toThrow(/ssoIssuer/);
  });

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

import { describe, expect, it } from 'vitest';
import { oidcConfiguration } from '../../functions/console/sso/oidc';
import { grantFor, parseRoleMap } from '../../functions/console/sso/role-map';
import type { SsoSettings } from '../../functions/shared/config';

const settings = (issuerUrl: string): SsoSettings => ({
  issuerUrl,
  clientId: 'console',
  clientSecret: undefined,
  clientSecretArn: undefined,
  redirectUrl: undefined,
  roleClaim: 'groups',
  roleMap: '{}',
  scopes: 'openid',
  label: undefined,
});

describe('console SSO: the issuer is an outbound URL under the SSRF rules', () => {
  it.each(['https://169.254.169.254/latest', 'https://10.0.0.7/realms/x', 'https://localhost/issuer'])('refuses discovery at %s (not trusted)', async (url) => {
    const err = await oidcConfiguration(settings(url)).then(
      () => undefined,
      (e: unknown) => e as { cause?: unknown },
    );
    expect(err?.cause).toMatchObject({ status: 400, code: 'blocked_custom_host' });
  });

  it('refuses a plain-http issuer that is not a trusted host', async () => {
    await expect(oidcConfiguration(settings('http://idp.example.test'))).rejects.toThrow(/HTTPS/);
  });
});

describe('console SSO: the role map', () => {
  const map = parseRoleMap(JSON.stringify({ admins: 'org-admin', 'team-a': 'workspace-admin:team-a', readers: 'viewer' }));

  it('grants the highest role of the mapped groups, and nothing without one', () => {
    expect(grantFor(['readers', 'team-a'], map)).toEqual({ group: 'team-a', grant: { role: 'workspace-admin', workspace: 'team-a' } });
    expect(grantFor('admins', map)?.grant).toEqual({ role: 'org-admin' });
    expect(grantFor(['staff'], map)).toBeUndefined();
    expect(grantFor(undefined, map)).toBeUndefined();
    expect(grantFor([{ not: 'a string' }], map)).toBeUndefined();
  });

  it('refuses a malformed map with a message naming the group', () => {
    expect(() => parseRoleMap('not json')).toThrow(/SSO_ROLE_MAP is not valid JSON/);
    expect(() => parseRoleMap('["org-admin"]')).toThrow(/JSON object/);
    expect(() => parseRoleMap('{"x":"admin"}')).toThrow(/SSO_ROLE_MAP\["x"\]/);
    expect(() => parseRoleMap('{"x":"member:"}')).toThrow(/SSO_ROLE_MAP\["x"\]/);
    expect(() => parseRoleMap('{"x":"org-admin:ws"}')).toThrow(/org-admin holds in every workspace/);
  });
});

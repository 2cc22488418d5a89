import { randomBytes } from 'node:crypto';
import type { JWTPayload } from 'jose';
import { verifyConsoleToken } from '../../shared/auth/console-session';
import { issueSession, signConsoleToken } from '../issue';
import { BOOTSTRAP_MARKER, insufficientRole } from '../../shared/auth/roles';
import { config, type SsoSettings } from '../../shared/config';
import { getItem } from '../../shared/db/ops';
import { badRequest, GatewayError, unauthorized } from '../../shared/errors';
import { ok } from '../../shared/http/response';
import type { GatewayRequest, HttpResponse, Route } from '../../shared/http/types';
import { findWorkspace } from '../../shared/stores/workspaces';
import { log } from '../../shared/telemetry/logger';
import { clientSecretOf } from './client-secret';
import { client, oidcConfiguration } from './oidc';
import { grantFor, parseRoleMap, type RoleGrant } from './role-map';

/**
 * Single sign-on to the console (docs/console-sso.md): `GET /console/sso/login` sends the
 * browser to the issuer (authorization code + PKCE S256, state, nonce; the three kept in a
 * signed, HttpOnly cookie for ten minutes); `GET /console/sso/callback` trades the code,
 * checks the ID token, maps the role claim to a role and workspace, sets the session
 * cookie and returns to the console. `GET /console/sso/config` tells the sign-in page
 * whether to offer it.
 */
const TRANSACTION_COOKIE = 'gw_console_sso';
const TRANSACTION_AUDIENCE = 'ai-gateway-console-sso';
const TRANSACTION_TTL_SECONDS = 600;
const CALLBACK_PATH = '/console/sso/callback';
const NO_STORE = { 'cache-control': 'no-store' };

interface Transaction extends JWTPayload {
  verifier: string;
  state: string;
  nonce: string;
}

const ssoFailed = (message: string, code = 'sso_failed') => unauthorized(message, code);

function enabledSettings(): SsoSettings {
  const settings = config().sso;
  if (!settings.issuerUrl || !settings.clientId) {
    throw new GatewayError(
      404,
      'not_found_error',
      'Single sign-on is not configured on this gateway (SSO_ISSUER_URL, SSO_CLIENT_ID).',
      null,
      'sso_not_configured',
    );
  }
  return settings;
}

let roleMap: { source: string; map: ReadonlyMap<string, RoleGrant> } | undefined;

function roleMapOf(settings: SsoSettings): ReadonlyMap<string, RoleGrant> {
  if (roleMap?.source !== settings.roleMap) roleMap = { source: settings.roleMap, map: parseRoleMap(settings.roleMap) };
  return roleMap.map;
}

/** Where the issuer sends the browser back: SSO_REDIRECT_URL, or this gateway's own callback. */
function redirectUrl(req: GatewayRequest, settings: SsoSettings): string {
  if (settings.redirectUrl) return settings.redirectUrl;
  const proto = req.headers['x-forwarded-proto']?.split(',')[0]?.trim() || 'https';
  return `${proto}://${req.headers.host}${CALLBACK_PATH}`;
}

const transactionCookie = (value: string, maxAge: number) =>
  // Lax, not Strict: the issuer's redirect back is a cross-site navigation, which must carry it.
  `${TRANSACTION_COOKIE}=${value}; Path=/; Max-Age=${maxAge}; HttpOnly; Secure; SameSite=Lax`;

async function ssoConfig(): Promise<HttpResponse> {
  const settings = config().sso;
  const enabled = Boolean(settings.issuerUrl && settings.clientId);
  return ok({ object: 'console.sso_config', enabled, ...(enabled ? { issuer: settings.issuerUrl, label: settings.label ?? 'Single sign-on' } : {}) });
}

async function login(req: GatewayRequest): Promise<HttpResponse> {
  const enabled = enabledSettings();
  // Before discovery: the discovered configuration keeps the client authentication it was made with.
  const settings = { ...enabled, clientSecret: await clientSecretOf(enabled, req.context) };
  const oidc = await oidcConfiguration(settings).catch((err: unknown) => {
    log.error('sso discovery failed', { issuer: settings.issuerUrl, error: String(err) }, req.context);
    throw new GatewayError(
      502,
      'upstream_error',
      'The single sign-on issuer could not be reached or its discovery document is invalid.',
      null,
      'sso_issuer_unavailable',
    );
  });
  const tx: Transaction = { verifier: client.randomPKCECodeVerifier(), state: client.randomState(), nonce: client.randomNonce() };
  const url = client.buildAuthorizationUrl(oidc, {
    redirect_uri: redirectUrl(req, settings),
    scope: settings.scopes,
    response_type: 'code',
    code_challenge: await client.calculatePKCECodeChallenge(tx.verifier),
    code_challenge_method: 'S256',
    state: tx.state,
    nonce: tx.nonce,
  });
  const token = await signConsoleToken(
    { ...tx, jti: randomBytes(8).toString('hex') },
    TRANSACTION_AUDIENCE,
    Math.floor(Date.now() / 1000) + TRANSACTION_TTL_SECONDS,
  );
  return { statusCode: 302, headers: { ...NO_STORE, location: url.href, 'set-cookie': transactionCookie(token, TRANSACTION_TTL_SECONDS) } };
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim() || undefined;
  }
  return undefined;
}

/** The mapped role's workspace (and organisation): the named one, or the organisation's first. */
async function workspaceOf(grant: RoleGrant): Promise<{ workspaceId: string; organisationId: string }> {
  const marker = await getItem<{ organisation_id: string; workspace_id: string }>('control', BOOTSTRAP_MARKER, true);
  if (!marker) throw new Error('the gateway has not been bootstrapped');
  if (!grant.workspace) return { workspaceId: marker.workspace_id, organisationId: marker.organisation_id };
  const ws = await findWorkspace(marker.organisation_id, grant.workspace);
  if (!ws) throw insufficientRole(`SSO_ROLE_MAP names workspace '${grant.workspace}', which does not exist: ask an operator to fix the role map.`);
  return { workspaceId: ws.id, organisationId: marker.organisation_id };
}

async function callback(req: GatewayRequest): Promise<HttpResponse> {
  const settings = enabledSettings();
  if (req.query.error) throw ssoFailed(`The issuer refused the sign-in: ${String(req.query.error).slice(0, 100)}.`);
  const raw = cookieValue(req.headers.cookie, TRANSACTION_COOKIE);
  const tx = raw ? await verifyConsoleToken<Transaction>(raw, TRANSACTION_AUDIENCE) : undefined;
  if (!tx) throw badRequest('No single sign-on in progress (or it took over ten minutes): start again from the sign-in page.', null, 'sso_no_transaction');
  if (req.query.state !== tx.state)
    throw badRequest('The sign-in response does not match the sign-in this browser started (state).', 'state', 'sso_state_mismatch');
  const oidc = await oidcConfiguration({ ...settings, clientSecret: await clientSecretOf(settings, req.context) });
  const current = new URL(redirectUrl(req, settings));
  current.search = req.rawQuery;
  let claims: Record<string, unknown>;
  try {
    const tokens = await client.authorizationCodeGrant(oidc, current, {
      pkceCodeVerifier: tx.verifier,
      expectedState: tx.state,
      expectedNonce: tx.nonce,
      idTokenExpected: true,
    });
    claims = (tokens.claims() ?? {}) as Record<string, unknown>;
  } catch (err) {
    log.warn('sso callback refused', { error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) }, req.context);
    throw ssoFailed('The sign-in could not be completed with the issuer (code, PKCE or ID token check failed): start again.');
  }
  const subject = String(claims.sub);
  const email = typeof claims.email === 'string' ? claims.email : undefined;
  const matched = grantFor(claims[settings.roleClaim], roleMapOf(settings));
  if (!matched) {
    log.info('sso sign-in without a mapped group', { subject, claim: settings.roleClaim }, req.context);
    throw insufficientRole(
      `Signed in as ${email ?? subject}, but none of your \`${settings.roleClaim}\` maps to a gateway role (SSO_ROLE_MAP): ask an operator for access.`,
    );
  }
  const { role } = matched.grant;
  const { workspaceId, organisationId } = await workspaceOf(matched.grant);
  const { cookie } = await issueSession({
    kind: 'sso',
    subject,
    ...(email ? { email } : {}),
    role,
    workspaceId,
    organisationId,
    // Members and admins use models (the playground); viewers only read.
    scopes: role === 'viewer' ? [] : ['gateway'],
  });
  log.info('console session started', { kind: 'sso', subject, group: matched.group, role, workspace_id: workspaceId }, req.context);
  // Relative, so a stage prefix in the path (API Gateway's `/prod`) is kept: /console/.
  return { statusCode: 302, headers: { ...NO_STORE, location: '../', 'set-cookie': cookie } };
}

export const ssoRoutes: Route[] = [
  { method: 'GET', path: '/console/sso/config', access: 'public', handler: ssoConfig },
  { method: 'GET', path: '/console/sso/login', access: 'public', handler: login },
  { method: 'GET', path: CALLBACK_PATH, access: 'public', handler: callback },
];

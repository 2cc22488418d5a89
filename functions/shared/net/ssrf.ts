import dns, { type LookupAddress, type LookupOptions } from 'node:dns';
import ipaddr from 'ipaddr.js';
import { config } from '../config';
import { badRequest, type GatewayError } from '../errors';

/**
 * Server-side request forgery guard for every outbound call to a caller-chosen URL
 * (custom hosts; docs/api.md item 4). Two layers:
 *
 * 1. `assertSafeUrl` checks the URL itself: http/https only, no userinfo, and the host,
 *    when it is an IP literal, must be ordinary public unicast. The host is parsed by the
 *    WHATWG URL parser, which already turns every IPv4 spelling (decimal `2130706433`,
 *    hex `0x7f000001`, octal `0177.0.0.1`, short `127.1`, percent-encoded, full-width
 *    digits, a trailing dot) into dotted-quad and compresses IPv6, so one classification of
 *    the canonical form covers all encodings. Well-known internal names (`localhost`,
 *    `*.localhost`, `*.internal`, `*.local`, ...) are refused by name.
 * 2. `guardedLookup` is the DNS step of the connection: it resolves every address of a
 *    host name and fails when any of them is blocked. Because node:http connects to
 *    exactly the addresses this lookup hands back, a name that resolves to a private
 *    address (or "rebinds" to one between a check and the connect) is refused.
 *
 * Only ipaddr.js's `unicast` range is admitted. Addresses that embed an IPv4 address are
 * judged by it: IPv4-mapped `::ffff:a.b.c.d` and well-known-prefix NAT64 `64:ff9b::/96`
 * (what DNS64 returns for public hosts on IPv6-only networks) are allowed exactly when the
 * embedded IPv4 address is. IPv4-compatible `::a.b.c.d`, IPv4-translated `::ffff:0:a.b.c.d`,
 * 6to4 `2002::/16` and Teredo `2001::/32` are always refused (deprecated or tunnelling
 * ranges); the message names the embedded address when it is itself internal.
 *
 * Hosts in the trusted list (GATEWAY_TRUSTED_HOSTS) are admitted: a case-insensitive exact
 * host-name match, or an IP literal that denotes the same address.
 */

export const BLOCKED_HOST_CODE = 'blocked_custom_host';

export interface SafeUrlOptions {
  /** Host names or IP literals admitted even though they would be blocked. */
  trustedHosts?: readonly string[];
  /** Header or field the URL came from, reported as the error's `param`. */
  param?: string;
}

type Addr = ipaddr.IPv4 | ipaddr.IPv6;

const V4_RANGE_LABEL: Record<string, string> = {
  unspecified: "the 'this network' range 0.0.0.0/8",
  broadcast: 'the broadcast address',
  multicast: 'a multicast address',
  linkLocal: 'a link-local address (169.254.0.0/16, which includes the cloud metadata service)',
  loopback: 'a loopback address',
  carrierGradeNat: 'the carrier-grade NAT range 100.64.0.0/10',
  private: 'a private network address',
  reserved: 'a reserved, documentation or benchmarking address',
  as112: 'an AS112 address',
  amt: 'an AMT relay address',
};

const V6_RANGE_LABEL: Record<string, string> = {
  unspecified: 'the unspecified address ::',
  linkLocal: 'an IPv6 link-local address (fe80::/10)',
  multicast: 'an IPv6 multicast address',
  loopback: 'the IPv6 loopback address',
  uniqueLocal: 'an IPv6 unique-local address (fc00::/7)',
  deprecatedSiteLocal: 'an IPv6 site-local address (fec0::/10)',
  discard: 'the IPv6 discard prefix 100::/64',
  rfc6145: 'an IPv4-translated IPv6 address',
  rfc6052: 'an IPv6 local-use NAT64 address',
  benchmarking: 'an IPv6 benchmarking address',
  reserved: 'a reserved or documentation IPv6 address',
};

function v4Reason(addr: ipaddr.IPv4): string | null {
  const range = addr.range();
  if (range === 'unicast') return null;
  return V4_RANGE_LABEL[range] ?? `a special-purpose address (${range})`;
}

const v4FromParts = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);

function v6Reason(addr: ipaddr.IPv6): string | null {
  const p = addr.parts as [number, number, number, number, number, number, number, number];
  if (addr.isIPv4MappedAddress()) {
    const v4 = addr.toIPv4Address();
    const r = v4Reason(v4);
    return r && `an IPv4-mapped IPv6 address of ${v4.toString()}, ${r}`;
  }
  const range = addr.range();
  if (range === 'unspecified' || range === 'loopback') return V6_RANGE_LABEL[range]!;
  if (p[0] === 0 && p[1] === 0 && p[2] === 0 && p[3] === 0 && p[4] === 0 && p[5] === 0) {
    const v4 = v4FromParts(p[6], p[7]);
    const r = v4Reason(v4);
    return `an IPv4-compatible IPv6 address of ${v4.toString()} (deprecated)${r ? `, ${r}` : ''}`;
  }
  if (range === 'rfc6052' && p[0] === 0x64 && p[1] === 0xff9b && p[2] === 0 && p[3] === 0 && p[4] === 0 && p[5] === 0) {
    // Well-known NAT64 prefix: the connection really goes to the embedded IPv4 address.
    const v4 = v4FromParts(p[6], p[7]);
    const r = v4Reason(v4);
    return r && `a NAT64 address of ${v4.toString()}, ${r}`;
  }
  if (range === '6to4') {
    const v4 = v4FromParts(p[1], p[2]);
    const r = v4Reason(v4);
    return `a 6to4 address embedding ${v4.toString()}${r ? `, ${r}` : ' (6to4 is deprecated)'}`;
  }
  if (range === 'teredo') {
    // Teredo client address: the last 32 bits, inverted.
    const v4 = v4FromParts(~p[6] & 0xffff, ~p[7] & 0xffff);
    const r = v4Reason(v4);
    return `a Teredo tunnelling address (client ${v4.toString()}${r ? `, ${r}` : ''})`;
  }
  if (range === 'unicast') return null;
  return V6_RANGE_LABEL[range] ?? `a special-purpose IPv6 address (${range})`;
}

function addrReason(addr: Addr): string | null {
  return addr.kind() === 'ipv4' ? v4Reason(addr as ipaddr.IPv4) : v6Reason(addr as ipaddr.IPv6);
}

/** Parse an IP literal (with or without brackets / zone id); undefined when not one. */
function parseIp(text: string): Addr | undefined {
  const s = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (ipaddr.IPv4.isValidFourPartDecimal(s)) return ipaddr.IPv4.parse(s);
  if (s.includes(':') && ipaddr.IPv6.isValid(s)) return ipaddr.IPv6.parse(s);
  return undefined;
}

/**
 * Why an address may not be contacted, or null when it may. Anything that is not a valid
 * IPv4 (dotted-quad) or IPv6 literal is blocked (fail closed).
 */
export function addressBlockReason(ip: string): string | null {
  const addr = parseIp(ip.trim());
  if (!addr) return 'not a valid IP address';
  return addrReason(addr);
}

/** True when the IP address may not be contacted (anything but public unicast). */
export function isBlockedAddress(ip: string): boolean {
  return addressBlockReason(ip) !== null;
}

/** Lower-case, without brackets and trailing dots: the form names are compared in. */
function normaliseHost(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  while (h.endsWith('.')) h = h.slice(0, -1);
  return h;
}

const BLOCKED_NAMES = new Set(['localhost', 'local', 'internal', 'metadata.google.internal', 'ip6-localhost', 'ip6-loopback']);
const BLOCKED_SUFFIXES = ['.localhost', '.internal', '.local'];

function nameReason(name: string): string | null {
  if (name === '') return 'the host is empty';
  if (BLOCKED_NAMES.has(name) || BLOCKED_SUFFIXES.some((s) => name.endsWith(s))) {
    return name === 'metadata.google.internal' ? 'it names the cloud metadata service' : 'it names a local or internal host';
  }
  return null;
}

/** A trusted list as looked up: its names, and its IP literals in one canonical form. */
interface TrustedSet {
  names: Set<string>;
  ipKeys: Set<string>;
}

/** Lists are read from the cached config, so each is parsed once. */
const trustedSets = new WeakMap<readonly string[], TrustedSet>();

const ipKeyOf = (name: string): string | undefined => {
  const ip = parseIp(name);
  return ip && ipaddr.process(ip.toString()).toString();
};

function trustedSetOf(trustedHosts: readonly string[]): TrustedSet {
  let set = trustedSets.get(trustedHosts);
  if (!set) {
    set = { names: new Set(), ipKeys: new Set() };
    for (const entry of trustedHosts) {
      const name = normaliseHost(entry);
      if (!name) continue;
      set.names.add(name);
      const key = ipKeyOf(name);
      if (key) set.ipKeys.add(key);
    }
    trustedSets.set(trustedHosts, set);
  }
  return set;
}

/** Whether `host` (a URL hostname, a DNS name or an IP literal) is in the trusted list. */
export function isTrustedHost(host: string, trustedHosts: readonly string[] | undefined): boolean {
  if (!trustedHosts || trustedHosts.length === 0) return false;
  const { names, ipKeys } = trustedSetOf(trustedHosts);
  const name = normaliseHost(host);
  if (names.has(name)) return true;
  if (ipKeys.size === 0) return false;
  const key = ipKeyOf(name);
  return key !== undefined && ipKeys.has(key);
}

function blocked(host: string, reason: string, param: string | null | undefined, addressRule = true): GatewayError {
  const where = host ? `Custom host '${host}' is not allowed` : 'The custom host is not allowed';
  const hint = addressRule
    ? ' Private, reserved, loopback, link-local and metadata addresses are blocked; an operator can admit a host with GATEWAY_TRUSTED_HOSTS.'
    : '';
  return badRequest(`${where}: ${reason}.${hint}`, param ?? null, BLOCKED_HOST_CODE);
}

/**
 * Parse and vet a caller-chosen URL. Returns the parsed URL (WHATWG-normalised) or throws a
 * GatewayError 400 `blocked_custom_host`. A host name that is not an IP literal passes here
 * and is vetted again after DNS resolution by `guardedLookup`.
 */
export function assertSafeUrl(url: string, opts: SafeUrlOptions = {}): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // The input is not echoed: it may carry credentials.
    throw badRequest('The custom host is not a valid absolute http(s) URL.', opts.param ?? null, BLOCKED_HOST_CODE);
  }
  const host = normaliseHost(parsed.hostname);
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw blocked(host, `only http and https URLs are allowed, not '${parsed.protocol.replace(/:$/, '')}'`, opts.param, false);
  }
  if (parsed.username !== '' || parsed.password !== '') {
    throw blocked(host, 'URLs with embedded credentials (user:password@) are not allowed', opts.param, false);
  }
  if (isTrustedHost(host, opts.trustedHosts)) return parsed;
  const ip = parseIp(host);
  const reason = ip ? addrReason(ip) : nameReason(host);
  if (reason) throw blocked(host, ip ? `it is ${reason}` : reason, opts.param);
  return parsed;
}

// ---------------------------------------------------------------------------------------
// DNS

/** Resolve every address of a host name (the shape of `dns.promises.lookup(h, {all: true})`). */
export type Resolver = (hostname: string, options: { family?: number; hints?: number }) => Promise<LookupAddress[]>;

export type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A function with the calling conventions of `dns.lookup`, usable as the `lookup` option of node:net/http(s). */
export interface LookupFn {
  (hostname: string, callback: LookupCallback): void;
  (hostname: string, options: number | (LookupOptions & { all?: boolean }), callback: LookupCallback): void;
}

export interface GuardedLookupOptions {
  /** Trusted hosts, or a function read at each lookup. */
  trustedHosts?: readonly string[] | (() => readonly string[]);
  /** The resolver; `dns.promises.lookup` with `{all: true}` by default. */
  resolve?: Resolver;
  /** When false, no address is checked (for the agent of explicitly trusted hosts). */
  guard?: boolean;
}

export const systemResolver: Resolver = (hostname, options) =>
  dns.promises.lookup(hostname, { all: true, family: options.family ?? 0, hints: options.hints ?? 0 });

function familyOf(options: number | (LookupOptions & { all?: boolean }) | undefined): { family?: number; hints?: number; all: boolean } {
  if (typeof options === 'number') return { family: options, all: false };
  if (!options) return { all: false };
  const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : (options.family as number | undefined);
  return { family, hints: options.hints, all: options.all === true };
}

/**
 * Build a `dns.lookup` replacement that resolves ALL addresses of the name and fails with a
 * GatewayError 400 `blocked_custom_host` when ANY is blocked, unless the name is trusted.
 * The connection then uses exactly the addresses checked, so DNS rebinding cannot slip a
 * private address in between the check and the connect.
 */
export function createGuardedLookup(opts: GuardedLookupOptions = {}): LookupFn {
  const resolve = opts.resolve ?? systemResolver;
  const trusted = () => (typeof opts.trustedHosts === 'function' ? opts.trustedHosts() : (opts.trustedHosts ?? []));
  const guard = opts.guard ?? true;

  function lookup(hostname: string, optionsOrCallback: number | (LookupOptions & { all?: boolean }) | LookupCallback, maybeCallback?: LookupCallback): void {
    const callback = (typeof optionsOrCallback === 'function' ? optionsOrCallback : maybeCallback) as LookupCallback;
    const { family, hints, all } = familyOf(typeof optionsOrCallback === 'function' ? undefined : optionsOrCallback);
    const check = guard && !isTrustedHost(hostname, trusted());
    const literal = parseIp(hostname);
    const pending: Promise<LookupAddress[]> = literal
      ? Promise.resolve([{ address: literal.toString(), family: literal.kind() === 'ipv4' ? 4 : 6 }])
      : resolve(hostname, { family, hints });
    pending.then(
      (addresses) => {
        if (addresses.length === 0) {
          const err: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
          err.code = 'ENOTFOUND';
          err.syscall = 'getaddrinfo';
          return callback(err, all ? [] : '');
        }
        if (check) {
          for (const a of addresses) {
            const reason = addressBlockReason(a.address);
            if (reason) {
              const err = blocked(normaliseHost(hostname), `it resolves to ${a.address}, ${reason}`, null);
              return callback(err as unknown as NodeJS.ErrnoException, all ? [] : '');
            }
          }
        }
        if (all) return callback(null, addresses);
        const first = addresses[0]!;
        return callback(null, first.address, first.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, all ? [] : ''),
    );
  }
  return lookup as LookupFn;
}

/**
 * `dns.lookup` that refuses names resolving to any blocked address, trusting the hosts of
 * GATEWAY_TRUSTED_HOSTS (config().trustedHosts, read lazily at each lookup).
 */
export const guardedLookup: LookupFn = createGuardedLookup({ trustedHosts: () => config().trustedHosts });

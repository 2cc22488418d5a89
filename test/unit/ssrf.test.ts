import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../functions/shared/errors';
import {
  addressBlockReason,
  assertSafeUrl,
  createGuardedLookup,
  guardedLookup,
  isBlockedAddress,
  isTrustedHost,
  type LookupFn,
  type Resolver,
} from '../../functions/shared/net/ssrf';

/** Run `fn`, expect a GatewayError with the 400 `blocked_custom_host` shape, return it. */
function expectBlocked(fn: () => unknown): GatewayError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(GatewayError);
  const err = caught as GatewayError;
  expect(err.status).toBe(400);
  expect(err.toBody()).toEqual({
    error: { message: err.message, type: 'invalid_request_error', param: err.param, code: 'blocked_custom_host' },
  });
  expect(err.message).toMatch(/not allowed|not a valid/);
  return err;
}

describe('WHATWG URL normalises every IPv4 spelling before classification', () => {
  it.each([
    ['http://2130706433', '127.0.0.1'],
    ['http://0x7f000001', '127.0.0.1'],
    ['http://0X7F.0x0.0x0.0x1', '127.0.0.1'],
    ['http://0177.0.0.1', '127.0.0.1'],
    ['http://017700000001', '127.0.0.1'],
    ['http://127.1', '127.0.0.1'],
    ['http://127.0.1', '127.0.0.1'],
    ['http://0x7f.1', '127.0.0.1'],
    ['http://127.0.0.01', '127.0.0.1'],
    ['http://127.0.0.1.', '127.0.0.1'],
    ['http://%31%32%37.0.0.1', '127.0.0.1'],
    ['http://\uFF11\uFF12\uFF17.0.0.1', '127.0.0.1'],
    ['http://127\u30020\u30020\u30021', '127.0.0.1'],
    ['http://0', '0.0.0.0'],
    ['http://0300.0250.1.1', '192.168.1.1'],
    ['http://2852039166', '169.254.169.254'],
    ['http://[::ffff:127.0.0.1]', '[::ffff:7f00:1]'],
    ['http://[0:0:0:0:0:ffff:7f00:1]', '[::ffff:7f00:1]'],
    ['http://LOCALHOST.', 'localhost.'],
    ['http://\uFF4C\uFF4F\uFF43\uFF41\uFF4C\uFF48\uFF4F\uFF53\uFF54', 'localhost'],
  ])('%s -> %s', (input, hostname) => {
    expect(new URL(input).hostname).toBe(hostname);
  });
});

/** Spellings that must all be refused (no trusted hosts). */
const BLOCKED: string[] = [
  // loopback in every IPv4 encoding
  'http://127.0.0.1',
  'http://127.0.0.1:8080/v1/chat/completions',
  'https://127.255.255.254',
  'http://2130706433',
  'http://0x7f000001',
  'http://0X7F.0x0.0x0.0x1',
  'http://0177.0.0.1',
  'http://017700000001',
  'http://127.1',
  'http://127.0.1',
  'http://0x7f.1',
  'http://127.0.0.01',
  'http://127.0.0.1.',
  'http://%31%32%37.0.0.1',
  'http://\uFF11\uFF12\uFF17.0.0.1',
  'http://127\u30020\u30020\u30021',
  'http://127.0.0.1\\@api.openai.com',
  '  http://127.0.0.1  ',
  'http:127.0.0.1',
  // this-network / unspecified
  'http://0',
  'http://0.0.0.0',
  'http://0.0.0.0:11434',
  'http://0.1.2.3',
  // IPv6 loopback, unspecified and IPv4 embeddings
  'http://[::1]',
  'http://[0:0:0:0:0:0:0:1]',
  'http://[::]',
  'http://[::ffff:127.0.0.1]',
  'http://[::ffff:7f00:1]',
  'http://[::ffff:169.254.169.254]',
  'http://[::ffff:10.0.0.1]',
  'http://[::127.0.0.1]',
  'http://[::8.8.8.8]',
  'http://[::ffff:0:7f00:1]',
  // cloud metadata and link-local
  'http://169.254.169.254/latest/meta-data',
  'http://169.254.169.254/latest/api/token',
  'http://0xa9fea9fe/latest/meta-data',
  'http://2852039166/latest/meta-data',
  'http://169.254.170.2/v2/credentials',
  'http://[fd00:ec2::254]/latest/meta-data',
  'http://[fe80::1]',
  'http://[febf::ffff]',
  // private, CGNAT, site/unique-local
  'http://10.0.0.1',
  'http://10.255.255.255',
  'http://012.0.0.1',
  'http://172.16.5.4',
  'http://172.31.255.255',
  'http://192.168.1.1',
  'http://0300.0250.1.1',
  'http://100.64.0.1',
  'http://100.127.255.254',
  'http://[fd00::1]',
  'http://[fc00::1]',
  'http://[fec0::1]',
  // multicast, broadcast, reserved, benchmarking, documentation
  'http://224.0.0.1',
  'http://239.255.255.250',
  'http://[ff02::1]',
  'http://[ff0e::1]',
  'http://255.255.255.255',
  'http://240.0.0.1',
  'http://198.18.0.1',
  'http://198.19.255.255',
  'http://192.0.0.8',
  'http://192.0.2.1',
  'http://198.51.100.7',
  'http://203.0.113.9',
  'http://[2001:db8::1]',
  'http://[100::1]',
  // NAT64, 6to4, Teredo
  'http://[64:ff9b::7f00:1]',
  'http://[64:ff9b::a9fe:a9fe]',
  'http://[64:ff9b::10.0.0.1]',
  'http://[64:ff9b:1::808:808]',
  'http://[2002:7f00:1::]',
  'http://[2002:a00:1::1]',
  'http://[2002:808:808::1]',
  'http://[2001:0:4136:e378:8000:63bf:80ff:fffe]',
  // names
  'http://localhost',
  'http://localhost:3000/v1',
  'http://LOCALHOST.',
  'http://LocalHost',
  'http://localhost..',
  'http://\uFF4C\uFF4F\uFF43\uFF41\uFF4C\uFF48\uFF4F\uFF53\uFF54',
  'http://foo.localhost',
  'http://api.openai.com.localhost',
  'http://metadata.google.internal/computeMetadata/v1/',
  'http://METADATA.GOOGLE.INTERNAL.',
  'http://ip-10-0-0-1.ec2.internal',
  'http://printer.local',
  'http://ip6-localhost',
  // credentials, schemes, malformed
  'http://user:pass@example.com',
  'https://user@api.openai.com',
  'https://:secret@api.openai.com',
  'http://127.0.0.1:80@api.openai.com',
  'ftp://example.com',
  'file:///etc/passwd',
  'gopher://example.com:70/_x',
  'ws://example.com',
  'data:text/plain,hello',
  'javascript:alert(1)',
  'not a url',
  '',
  '//api.openai.com/v1',
  'http://[fe80::1%25eth0]',
  'http://1.2.3.4.5',
];

describe('assertSafeUrl: blocked corpus', () => {
  it('has at least 40 spellings', () => {
    expect(BLOCKED.length).toBeGreaterThanOrEqual(40);
    expect(new Set(BLOCKED).size).toBe(BLOCKED.length);
  });

  it.each(BLOCKED)('blocks %j with the 400 shape', (url) => {
    const err = expectBlocked(() => assertSafeUrl(url));
    expect(err.param).toBeNull();
    let host: string | undefined;
    try {
      host = new URL(url).hostname.replace(/^\[|\]$/g, '').replace(/\.+$/, '');
    } catch {
      /* unparseable: no host to name */
    }
    if (host) expect(err.message).toContain(`'${host}'`);
  });

  it('explains why', () => {
    expect(expectBlocked(() => assertSafeUrl('http://2130706433')).message).toMatch(/'127\.0\.0\.1'.*loopback/);
    expect(expectBlocked(() => assertSafeUrl('http://169.254.169.254/latest')).message).toMatch(/link-local.*metadata/);
    expect(expectBlocked(() => assertSafeUrl('http://10.0.0.1')).message).toMatch(/private/);
    expect(expectBlocked(() => assertSafeUrl('http://100.64.0.1')).message).toMatch(/carrier-grade NAT/);
    expect(expectBlocked(() => assertSafeUrl('http://[::ffff:7f00:1]')).message).toMatch(/IPv4-mapped.*127\.0\.0\.1.*loopback/);
    expect(expectBlocked(() => assertSafeUrl('http://[64:ff9b::7f00:1]')).message).toMatch(/NAT64.*127\.0\.0\.1/);
    expect(expectBlocked(() => assertSafeUrl('http://[2002:7f00:1::]')).message).toMatch(/6to4.*127\.0\.0\.1.*loopback/);
    expect(expectBlocked(() => assertSafeUrl('http://[2001:0:4136:e378:8000:63bf:80ff:fffe]')).message).toMatch(/Teredo.*127\.0\.0\.1/);
    expect(expectBlocked(() => assertSafeUrl('http://metadata.google.internal')).message).toMatch(/metadata/);
    expect(expectBlocked(() => assertSafeUrl('ftp://example.com')).message).toMatch(/only http and https.*'ftp'/);
    expect(expectBlocked(() => assertSafeUrl('http://198.18.0.1')).message).toMatch(/benchmarking/);
  });

  it('never echoes credentials', () => {
    for (const url of ['http://user:hunter2@example.com', 'https://:hunter2@api.openai.com/v1']) {
      const err = expectBlocked(() => assertSafeUrl(url));
      expect(err.message).toMatch(/credentials/);
      expect(err.message).not.toContain('hunter2');
    }
    expect(expectBlocked(() => assertSafeUrl('http//hunter2@x')).message).not.toContain('hunter2');
  });

  it('names the header in param when given', () => {
    const err = expectBlocked(() => assertSafeUrl('http://10.1.2.3', { param: 'x-gateway-custom-host' }));
    expect(err.param).toBe('x-gateway-custom-host');
    expect(expectBlocked(() => assertSafeUrl('nope', { param: 'custom_host' })).param).toBe('custom_host');
  });
});

describe('assertSafeUrl: allowed', () => {
  it.each([
    ['https://api.openai.com/v1', 'api.openai.com'],
    ['https://api.anthropic.com:443/v1/messages', 'api.anthropic.com'],
    ['http://8.8.8.8', '8.8.8.8'],
    ['http://134744072', '8.8.8.8'],
    ['http://1.1.1.1:8080/v1', '1.1.1.1'],
    ['https://[2606:4700::1111]', '[2606:4700::1111]'],
    ['https://[2001:4860:4860::8888]/v1', '[2001:4860:4860::8888]'],
    ['http://[::ffff:8.8.8.8]', '[::ffff:808:808]'],
    ['http://[64:ff9b::8.8.8.8]', '[64:ff9b::808:808]'],
    ['https://example.localhost.com', 'example.localhost.com'],
    ['https://internal.example.com', 'internal.example.com'],
    ['https://local-llm.example.com/v1', 'local-llm.example.com'],
    ['HTTPS://API.OPENAI.COM/v1', 'api.openai.com'],
    ['https://11.0.0.1', '11.0.0.1'],
    ['https://172.32.0.1', '172.32.0.1'],
    ['https://100.128.0.1', '100.128.0.1'],
  ])('admits %s', (url, hostname) => {
    const parsed = assertSafeUrl(url);
    expect(parsed).toBeInstanceOf(URL);
    expect(parsed.hostname).toBe(hostname);
  });
});

describe('assertSafeUrl: trusted hosts', () => {
  it.each([
    ['http://127.0.0.1:11434/v1', ['127.0.0.1']],
    ['http://2130706433:11434', ['127.0.0.1']],
    ['http://[::ffff:127.0.0.1]', ['127.0.0.1']],
    ['http://localhost:8080', ['localhost']],
    ['http://LOCALHOST.:8080', ['localhost']],
    ['http://localhost', ['LocalHost']],
    ['http://[::1]:8000', ['::1']],
    ['http://[::1]:8000', ['[::1]']],
    ['http://[::1]', ['0:0:0:0:0:0:0:1']],
    ['http://ollama.internal:11434', ['Ollama.Internal']],
    ['http://10.0.0.5/v1', ['api.openai.com', '10.0.0.5']],
  ])('admits %s when trusted %j', (url, trustedHosts) => {
    expect(assertSafeUrl(url, { trustedHosts })).toBeInstanceOf(URL);
  });

  it.each([
    ['http://foo.localhost', ['localhost']],
    ['http://127.0.0.2', ['127.0.0.1']],
    ['http://localhost', ['127.0.0.1']],
    ['http://127.0.0.1', ['localhost']],
    ['http://metadata.google.internal', ['google.internal']],
    ['ftp://localhost', ['localhost']],
    ['http://u:p@localhost', ['localhost']],
    ['file:///etc/passwd', ['localhost', '']],
  ])('still blocks %s when trusted %j', (url, trustedHosts) => {
    expectBlocked(() => assertSafeUrl(url, { trustedHosts }));
  });

  it('isTrustedHost compares names case-insensitively and addresses by value', () => {
    expect(isTrustedHost('LOCALHOST.', ['localhost'])).toBe(true);
    expect(isTrustedHost('[::1]', ['0::1'])).toBe(true);
    expect(isTrustedHost('sub.localhost', ['localhost'])).toBe(false);
    expect(isTrustedHost('localhost', undefined)).toBe(false);
  });
});

describe('isBlockedAddress', () => {
  it.each([
    '127.0.0.1',
    '10.1.2.3',
    '172.20.0.1',
    '192.168.0.10',
    '169.254.169.254',
    '100.100.100.200',
    '0.0.0.0',
    '255.255.255.255',
    '224.0.0.251',
    '198.18.5.5',
    '192.0.2.55',
    '::1',
    '::',
    'fe80::1',
    'fd12:3456::1',
    'ff02::fb',
    '::ffff:10.0.0.1',
    '::ffff:7f00:1',
    '::7f00:1',
    '64:ff9b::a00:1',
    '2002:c0a8:101::1',
    '2001::1',
    '2001:db8::5',
    'fd00:ec2::254',
    // anything that is not a canonical address fails closed
    'garbage',
    '',
    '127.1',
    '2130706433',
  ])('%j is blocked', (ip) => {
    expect(isBlockedAddress(ip)).toBe(true);
    expect(addressBlockReason(ip)).toEqual(expect.any(String));
  });

  it.each(['8.8.8.8', '1.1.1.1', '104.18.6.192', '2606:4700::1111', '2001:4860:4860::8888', '::ffff:8.8.8.8', '64:ff9b::808:808'])('%j is allowed', (ip) => {
    expect(isBlockedAddress(ip)).toBe(false);
    expect(addressBlockReason(ip)).toBeNull();
  });
});

/** Call a lookup function the way node:net does and capture the callback. */
function runLookup(lookup: LookupFn, hostname: string, options?: number | { all?: boolean; family?: number }) {
  return new Promise<{ err: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number }>((resolve) => {
    const cb = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => resolve({ err, address, family });
    if (options === undefined) lookup(hostname, cb);
    else lookup(hostname, options, cb);
  });
}

function fakeResolver(table: Record<string, LookupAddress[]>) {
  const calls: Array<{ hostname: string; family?: number }> = [];
  const resolve: Resolver = async (hostname, options) => {
    calls.push({ hostname, family: options.family });
    const found = table[hostname];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return found;
  };
  return { resolve, calls };
}

describe('guardedLookup (DNS)', () => {
  it("refuses 'localhost' (resolved through /etc/hosts) when nothing is trusted", async () => {
    const { err, address } = await runLookup(createGuardedLookup({ trustedHosts: [] }), 'localhost', { all: true });
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toMatchObject({ status: 400, code: 'blocked_custom_host' });
    expect(err!.message).toMatch(/'localhost'.*resolves to (127\.0\.0\.1|::1)/);
    expect(address).toEqual([]);
  });

  it('the default guardedLookup (trusted hosts from config) refuses localhost too', async () => {
    const { err } = await runLookup(guardedLookup, 'localhost', { all: true });
    expect(err).toMatchObject({ status: 400, code: 'blocked_custom_host' });
  });

  it("admits 'localhost' when it is trusted", async () => {
    const { err, address } = await runLookup(createGuardedLookup({ trustedHosts: ['localhost'] }), 'localhost', { all: true });
    expect(err).toBeNull();
    expect((address as LookupAddress[]).map((a) => a.address)).toContain('127.0.0.1');
  });

  it('is blocked when ANY resolved address is private (rebinding / mixed answers)', async () => {
    const { resolve } = fakeResolver({
      'mixed.example': [
        { address: '93.184.216.34', family: 4 },
        { address: '10.0.0.7', family: 4 },
      ],
      'v6.example': [
        { address: '2606:4700::1111', family: 6 },
        { address: '::ffff:169.254.169.254', family: 6 },
      ],
    });
    const lookup = createGuardedLookup({ trustedHosts: ['other.example'], resolve });
    for (const [host, shown] of [
      ['mixed.example', '10.0.0.7'],
      ['v6.example', '::ffff:169.254.169.254'],
    ] as const) {
      for (const options of [{ all: true }, { all: false }, undefined, 0]) {
        const { err } = await runLookup(lookup, host, options);
        expect(err, `${host} ${JSON.stringify(options)}`).toMatchObject({ status: 400, code: 'blocked_custom_host' });
        expect(err!.message).toContain(shown);
      }
    }
  });

  it('hands back exactly the vetted addresses, in both callback forms', async () => {
    const answer = [
      { address: '93.184.216.34', family: 4 },
      { address: '2606:2800:220:1::1', family: 6 },
    ];
    const { resolve, calls } = fakeResolver({ 'api.example': answer });
    const lookup = createGuardedLookup({ resolve });
    expect(await runLookup(lookup, 'api.example', { all: true })).toEqual({ err: null, address: answer, family: undefined });
    expect(await runLookup(lookup, 'api.example', { all: false })).toEqual({ err: null, address: '93.184.216.34', family: 4 });
    expect(await runLookup(lookup, 'api.example')).toEqual({ err: null, address: '93.184.216.34', family: 4 });
    await runLookup(lookup, 'api.example', 6);
    await runLookup(lookup, 'api.example', { all: true, family: 4 });
    expect(calls.map((c) => c.family)).toEqual([undefined, undefined, undefined, 6, 4]);
  });

  it('admits private answers for a trusted name, and not for others', async () => {
    const { resolve } = fakeResolver({
      'llm.corp': [{ address: '10.0.0.9', family: 4 }],
      'evil.example': [{ address: '10.0.0.9', family: 4 }],
    });
    const lookup = createGuardedLookup({ trustedHosts: () => ['LLM.corp'], resolve });
    expect((await runLookup(lookup, 'llm.corp', { all: true })).err).toBeNull();
    expect((await runLookup(lookup, 'evil.example', { all: true })).err).toMatchObject({ code: 'blocked_custom_host' });
  });

  it('checks IP literals without resolving them', async () => {
    const { resolve, calls } = fakeResolver({});
    const lookup = createGuardedLookup({ resolve });
    expect((await runLookup(lookup, '127.0.0.1', { all: true })).err).toMatchObject({ code: 'blocked_custom_host' });
    expect(await runLookup(lookup, '8.8.8.8', { all: true })).toEqual({ err: null, address: [{ address: '8.8.8.8', family: 4 }], family: undefined });
    expect(calls).toEqual([]);
  });

  it('passes resolver failures through and treats an empty answer as not found', async () => {
    const { resolve } = fakeResolver({ 'empty.example': [] });
    const lookup = createGuardedLookup({ resolve });
    expect((await runLookup(lookup, 'nowhere.example', { all: true })).err).toMatchObject({ code: 'ENOTFOUND' });
    expect((await runLookup(lookup, 'empty.example', { all: true })).err).toMatchObject({ code: 'ENOTFOUND' });
  });

  it('with guard: false checks nothing (agent for explicitly trusted names)', async () => {
    const { resolve } = fakeResolver({ 'x.example': [{ address: '127.0.0.1', family: 4 }] });
    expect(await runLookup(createGuardedLookup({ guard: false, resolve }), 'x.example', { all: false })).toEqual({
      err: null,
      address: '127.0.0.1',
      family: 4,
    });
  });
});

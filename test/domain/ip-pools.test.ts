/**
 * The rules a pool must keep, without a store: each refusal with its code and a message naming
 * the field, and a pool in canonical forms when it keeps them.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError } from '../../src/domain/errors.ts';
import { checkPool, ipv4Handout, MAX_RESERVED, type PoolFields } from '../../src/domain/ip-pools.ts';

const refused = (p: PoolFields, code: string, message: RegExp) =>
  assert.throws(
    () => checkPool(p),
    (err: unknown) => err instanceof ApiError && err.code === code && message.test(err.message),
    `${JSON.stringify(p)} -> ${code}`,
  );

test('IPv4: defaults from the network; each field outside it refused with the code of its kind', () => {
  assert.deepEqual(checkPool({ name: 'rack.1_a-b', family: 'ipv4', network: '192.0.2.0/29' }), {
    name: 'rack.1_a-b',
    family: 'ipv4',
    network: '192.0.2.0/29',
    gateway: '192.0.2.1',
    first: '192.0.2.1',
    last: '192.0.2.6',
    reserved: [],
    assignPrefixLength: null,
  });
  const v4 = { name: 'p', family: 'ipv4', network: '192.0.2.0/28' };
  refused({ ...v4, name: 'a b' }, 'validation_failed', /pool name "a b"/);
  refused({ ...v4, name: '' }, 'validation_failed', /pool name ""/);
  refused({ ...v4, family: 'ipx' }, 'validation_failed', /family must be ipv4 or ipv6, got "ipx"/);
  refused({ ...v4, network: '192.0.2.1/28' }, 'invalid_network', /no host bits set/);
  refused({ ...v4, network: '10.0.0.0/8' }, 'invalid_network', /from \/12 to \/30/);
  refused({ ...v4, network: '192.0.2.0/31' }, 'invalid_network', /from \/12 to \/30/);
  refused({ ...v4, network: '2001:db8::/48' }, 'invalid_network', /not an IPv4 network/);
  refused({ ...v4, assignPrefixLength: 64 }, 'validation_failed', /for IPv6 pools only/);
  refused(
    { ...v4, gateway: '192.0.2.0' },
    'gateway_outside_network',
    /gateway 192\.0\.2\.0 is not a host address/,
  );
  refused({ ...v4, gateway: '192.0.2.15' }, 'gateway_outside_network', /broadcast|not a host address/);
  refused({ ...v4, gateway: 'gw' }, 'validation_failed', /gateway "gw" is not an IPv4 address/);
  refused({ ...v4, first: '198.51.100.2' }, 'range_outside_network', /first 198\.51\.100\.2/);
  refused({ ...v4, last: '192.0.2.16' }, 'range_outside_network', /last 192\.0\.2\.16/);
  refused({ ...v4, first: '192.0.2.9', last: '192.0.2.4' }, 'range_outside_network', /comes after last/);
  refused(
    { ...v4, reserved: ['192.0.2.3', '10.0.0.1'] },
    'range_outside_network',
    /reserved address 10\.0\.0\.1/,
  );
  const many = Array.from(
    { length: MAX_RESERVED + 1 },
    (_, i) => `10.16.${((i + 1) >> 8) & 255}.${(i + 1) & 255}`,
  );
  refused({ ...v4, network: '10.16.0.0/12', reserved: many }, 'validation_failed', /at most 1024 reserved/);
});

test('IPv4: reserved addresses are kept once and in order; the handout leaves out the gateway and them', () => {
  const spec = checkPool({
    name: 'r',
    family: 'ipv4',
    network: '192.0.2.0/28',
    gateway: '192.0.2.14',
    first: '192.0.2.2',
    reserved: ['192.0.2.9', '192.0.2.3', '192.0.2.9'],
  });
  assert.deepEqual(spec.reserved, ['192.0.2.3', '192.0.2.9']);
  const out = ipv4Handout(spec);
  assert.equal(out.last - out.first + 1, 13, '.2 to .14');
  assert.deepEqual(
    out.excluded.sort((a, b) => a - b),
    [3221225987, 3221225993, 3221225998],
    '.3, .9 and the gateway .14',
  );
});

test('IPv6: a per-service prefix inside the pool and no narrower than /64; a gateway on the link or inside', () => {
  const v6 = { name: 'six', family: 'ipv6', network: '2001:db8:4000::/48' };
  assert.deepEqual(checkPool(v6), {
    name: 'six',
    family: 'ipv6',
    network: '2001:db8:4000::/48',
    gateway: 'fe80::1',
    first: null,
    last: null,
    reserved: [],
    assignPrefixLength: 64,
  });
  assert.equal(checkPool({ ...v6, gateway: '2001:DB8:4000::1' }).gateway, '2001:db8:4000::1');
  refused({ ...v6, first: '2001:db8:4000::2' }, 'validation_failed', /first is for IPv4 pools only/);
  refused({ ...v6, last: '2001:db8:4000::9' }, 'validation_failed', /last is for IPv4 pools only/);
  refused({ ...v6, reserved: ['2001:db8:4000::5'] }, 'validation_failed', /reserved is for IPv4 pools only/);
  assert.equal(checkPool({ ...v6, reserved: [] }).assignPrefixLength, 64, 'an empty list is no list');
  refused({ ...v6, assignPrefixLength: 44 }, 'prefix_too_small', /from 48 to 64/);
  refused({ ...v6, assignPrefixLength: 80 }, 'prefix_too_small', /from 48 to 64/);
  refused({ ...v6, assignPrefixLength: 56.5 }, 'prefix_too_small', /56\.5/);
  refused({ ...v6, network: '2001:db8::/8' }, 'invalid_network', /from \/16 to \/64/);
  refused({ ...v6, network: '192.0.2.0/24' }, 'invalid_network', /not an IPv6 network/);
  refused({ ...v6, gateway: 'fe80' }, 'validation_failed', /gateway "fe80" is not an IPv6 address/);
  refused({ ...v6, gateway: '2001:db8:5000::1' }, 'gateway_outside_network', /neither link-local/);
});

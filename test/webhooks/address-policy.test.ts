import assert from 'node:assert/strict';
import { test } from 'node:test';
import { refusedAddressKind } from '../../src/webhooks/address-policy.ts';
import { parseWebhookUrl, resolveTarget, TargetRefused } from '../../src/webhooks/target.ts';
import { RANGE_NEIGHBOURS, REFUSED_RANGES, tableLookup } from '../helpers/webhooks.ts';

test('every special-purpose range is refused, first to last address, and its neighbours are not', () => {
  for (const [first, last, kind] of REFUSED_RANGES) {
    assert.equal(refusedAddressKind(first), kind, first);
    assert.equal(refusedAddressKind(last), kind, last);
  }
  for (const address of RANGE_NEIGHBOURS) assert.equal(refusedAddressKind(address), undefined, address);
});

test('forms of addresses: brackets, zones, IPv4-mapped judged by the IPv4 address, not an address', () => {
  const refused: [string, string][] = [
    ['[::1]', 'loopback'],
    ['fe80::1%eth0', 'link-local'],
    ['fd12:3456::1', 'private (unique local)'],
    ['ff02::1', 'multicast'],
    // IPv4-mapped addresses are judged by the IPv4 address they carry.
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:192.88.99.1', 'reserved (6to4 relay anycast)'],
    // Translation and tunnel prefixes are refused whatever they carry.
    ['64:ff9b::10.0.0.1', 'reserved (IPv4/IPv6 translation)'],
    ['64:ff9b::808:808', 'reserved (IPv4/IPv6 translation)'],
    ['2002:c0a8:0101::1', 'reserved (6to4)'],
    ['2002:0808:0808::1', 'reserved (6to4)'],
    ['2001::1', 'reserved (Teredo)'],
    ['::10.0.0.1', 'reserved (IPv4-compatible)'],
    ['not-an-address', 'not an IP address'],
  ];
  for (const [address, kind] of refused) assert.equal(refusedAddressKind(address), kind, address);
  for (const address of [
    '93.184.216.34',
    '8.8.8.8',
    '2606:4700::1111',
    '2a00:1450:4001:80b::200e',
    '::ffff:8.8.8.8',
  ])
    assert.equal(refusedAddressKind(address), undefined, address);
});

test('a host is refused when any of its addresses is; allowed, the first address is the one to connect to', async () => {
  const lookup = async (host: string) =>
    host === 'mixed.example.com'
      ? [
          { address: '93.184.216.34', family: 4 as const },
          { address: '10.0.0.1', family: 4 as const },
        ]
      : [];
  const url = parseWebhookUrl('https://mixed.example.com/hook');
  await assert.rejects(resolveTarget(url, lookup, false), (err: unknown) => {
    assert.ok(err instanceof TargetRefused);
    assert.equal(
      err.message,
      'mixed.example.com resolves to 10.0.0.1, a private address, which webhooks may not reach',
    );
    return true;
  });
  assert.deepEqual(await resolveTarget(url, lookup, true), { address: '93.184.216.34', family: 4 });
  await assert.rejects(
    resolveTarget(parseWebhookUrl('https://empty.example.com/'), lookup, true),
    /has no address/,
  );
  const literal = await resolveTarget(
    parseWebhookUrl('http://[2606:4700::1111]:8443/x'),
    tableLookup({}),
    false,
  );
  assert.deepEqual(literal, { address: '2606:4700::1111', family: 6 });
});

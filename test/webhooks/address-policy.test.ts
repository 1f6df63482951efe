import assert from 'node:assert/strict';
import { test } from 'node:test';
import { refusedAddressKind } from '../../src/webhooks/address-policy.ts';
import { parseWebhookUrl, resolveTarget, TargetRefused } from '../../src/webhooks/target.ts';
import { tableLookup } from '../helpers/webhooks.ts';

test('private, loopback, link-local, unspecified, multicast and reserved addresses are refused', () => {
  const refused: [string, string][] = [
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['10.255.0.1', 'private'],
    ['100.64.0.1', 'private (shared address space)'],
    ['127.0.0.1', 'loopback'],
    ['127.8.9.10', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.0.1', 'private'],
    ['192.0.2.7', 'reserved (documentation)'],
    ['198.18.0.1', 'reserved (benchmarking)'],
    ['224.0.0.251', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'reserved'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['fc00::1', 'private (unique local)'],
    ['fd12:3456::1', 'private (unique local)'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'reserved (documentation)'],
    // IPv6 forms that carry an IPv4 address are judged by it.
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['64:ff9b::10.0.0.1', 'private'],
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['2002:c0a8:0101::1', 'private'],
    ['::10.0.0.1', 'reserved (IPv4-compatible)'],
    ['not-an-address', 'not an IP address'],
  ];
  for (const [address, kind] of refused) assert.equal(refusedAddressKind(address), kind, address);
  for (const address of [
    '93.184.216.34',
    '8.8.8.8',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700::1111',
    '2a00:1450:4001:80b::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:0808:0808::1',
  ]) {
    assert.equal(refusedAddressKind(address), undefined, address);
  }
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

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError } from '../../src/domain/errors.ts';
import {
  canonicalAddress,
  checkPtr,
  defaultPtr,
  ipv4ReverseZone,
  ipv6ReverseZone,
  reverseName,
} from '../../src/domain/reverse-dns-names.ts';

test('reverse names and zones: a /24 per IPv4 address, the pool rounded down to a nibble for IPv6', () => {
  assert.equal(reverseName('192.0.2.5'), '5.2.0.192.in-addr.arpa.');
  assert.equal(ipv4ReverseZone('192.0.2.5'), '2.0.192.in-addr.arpa.');
  assert.equal(
    reverseName('2001:db8:4000:1::1'),
    '1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.1.0.0.0.0.0.0.4.8.b.d.0.1.0.0.2.ip6.arpa.',
  );
  assert.equal(ipv6ReverseZone('2001:db8:4000::/48'), '0.0.0.4.8.b.d.0.1.0.0.2.ip6.arpa.');
  assert.equal(ipv6ReverseZone('2001:db8:4000::/50'), '0.0.0.4.8.b.d.0.1.0.0.2.ip6.arpa.');
  assert.equal(ipv6ReverseZone('2001:db8:4000:8000::/49'), '0.0.0.4.8.b.d.0.1.0.0.2.ip6.arpa.');
  assert.equal(ipv6ReverseZone('2001:db8:4000:1230::/60'), '3.2.1.0.0.0.4.8.b.d.0.1.0.0.2.ip6.arpa.');
});

test('addresses in any spelling name one canonical address; anything else names none', () => {
  assert.equal(canonicalAddress('2001:0DB8:4000:0001:0:0:0:1'), '2001:db8:4000:1::1');
  assert.equal(canonicalAddress(' 192.0.2.5 '), '192.0.2.5');
  for (const bad of [
    '',
    'x',
    '192.0.2',
    '192.0.2.256',
    '010.0.0.1',
    '0x7f.0.0.1',
    'fe80::1%eth0',
    '2001:db8::/64',
  ])
    assert.equal(canonicalAddress(bad), undefined, bad);
});

test('the default PTR: {ip} with dots or colons as dashes, IPv6 written in full', () => {
  assert.equal(defaultPtr('ip-{ip}.example.net', '10.0.0.5'), 'ip-10-0-0-5.example.net');
  assert.equal(defaultPtr('ip-{ip}.example.net', '2001:db8::1'), 'ip-2001-db8-0-0-0-0-0-1.example.net');
  assert.equal(defaultPtr(undefined, '10.0.0.5'), undefined);
});

test('a PTR target is a host name by the order rule, lower-cased, one final dot taken off', () => {
  assert.equal(checkPtr('Mail.Example.COM.'), 'mail.example.com');
  for (const bad of [
    '',
    '.',
    'a..b',
    'under_score.example',
    '-x.example',
    'x-.example',
    `${'a'.repeat(64)}.x`,
    'a b',
    'x.example..',
  ])
    assert.throws(
      () => checkPtr(bad),
      (e: unknown) => e instanceof ApiError && e.code === 'invalid_ptr',
      bad,
    );
});

test('names of what is not an address of the kind asked are a mistake of the caller, said as such', () => {
  assert.throws(() => reverseName('not-an-ip'), /not an IP address: not-an-ip/);
  assert.throws(() => ipv4ReverseZone('2001:db8::1'), /not an IPv4 address: 2001:db8::1/);
  assert.throws(() => ipv4ReverseZone('nothing'), /not an IPv4 address: nothing/);
  assert.throws(() => defaultPtr('ip-{ip}.example.net', 'nothing'), /not an IP address: nothing/);
  assert.equal(ipv6ReverseZone('::/0'), 'ip6.arpa.', 'a pool of everything: the ip6.arpa zone itself');
  assert.equal(ipv6ReverseZone('2000::/3'), 'ip6.arpa.', 'shorter than a nibble: the same');
});

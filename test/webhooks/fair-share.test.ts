import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Contender, endpointOf, type Load, pickFair } from '../../src/webhooks/fair-share.ts';

const hook = (webhookId: string, resellerId: string, endpoint = `https://${webhookId}.example.com`) =>
  ({ webhookId, resellerId, endpoint }) satisfies Contender;
const idle: Load = { inFlight: 0, byReseller: new Map(), byEndpoint: new Map() };
const ids = (picked: Contender[]) => picked.map((c) => c.webhookId);
const never = new Map<string, number>();

test('resellers take turns; one alone gets at most half of the free senders', () => {
  const contenders = [hook('a1', 'A'), hook('a2', 'A'), hook('a3', 'A'), hook('b1', 'B')];
  assert.deepEqual(ids(pickFair(contenders, idle, { concurrency: 16, endpointCap: 2, lastServed: never })), [
    'a1',
    'b1',
    'a2',
    'a3',
  ]);
  const many = Array.from({ length: 10 }, (_, i) => hook(`a${i}`, 'A'));
  assert.equal(pickFair(many, idle, { concurrency: 16, endpointCap: 2, lastServed: never }).length, 8);
  assert.equal(pickFair(many, idle, { concurrency: 1, endpointCap: 2, lastServed: never }).length, 1);
});

test('the last free sender goes to a reseller with fewer in flight, then to the one served longest ago', () => {
  const load: Load = { inFlight: 7, byReseller: new Map([['A', 7]]), byEndpoint: new Map() };
  const contenders = [hook('a8', 'A'), hook('b1', 'B')];
  assert.deepEqual(ids(pickFair(contenders, load, { concurrency: 8, endpointCap: 2, lastServed: never })), [
    'b1',
  ]);
  const even: Load = {
    inFlight: 6,
    byReseller: new Map([
      ['A', 3],
      ['B', 3],
    ]),
    byEndpoint: new Map(),
  };
  const both = [hook('a4', 'A'), hook('b4', 'B')];
  const lastServed = new Map([
    ['A', 5],
    ['B', 9],
  ]);
  assert.deepEqual(ids(pickFair(both, even, { concurrency: 10, endpointCap: 2, lastServed })), ['a4']);
});

test('never more than the cap in flight to one endpoint, whosever the webhooks', () => {
  const shared = 'https://billing.example.net';
  const load: Load = { inFlight: 1, byReseller: new Map([['B', 1]]), byEndpoint: new Map([[shared, 1]]) };
  const contenders = [
    hook('a1', 'A', shared),
    hook('a2', 'A', shared),
    hook('a3', 'A'),
    hook('c1', 'C', shared),
  ];
  assert.deepEqual(ids(pickFair(contenders, load, { concurrency: 16, endpointCap: 2, lastServed: never })), [
    'a1',
    'a3',
  ]);
  assert.equal(endpointOf('https://Billing.example.net:443/hook?x=1'), shared);
  assert.equal(endpointOf('http://[::1]:8080/a'), 'http://[::1]:8080');
});

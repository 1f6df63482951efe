import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError } from '../../src/domain/errors.ts';
import {
  checkQuota,
  countedSize,
  exceededResource,
  orderDemand,
  type Quota,
  UNLIMITED,
  upgradeDemand,
} from '../../src/domain/quotas.ts';

const size = { cpu: 2, ram: 4, hdd: 40, ip: 1, backup: 10 };
const use = { services: 3, cpu: 6, ram: 12, hdd: 120, ip: 3, backup: 30 };

test('no caps: nothing is ever exceeded', () => {
  assert.equal(exceededResource(UNLIMITED, use, orderDemand({ ...size, ram: 1_000_000 })), undefined);
});

test('each resource is named when a request would pass its cap, and only then', () => {
  const demand = orderDemand(size);
  for (const r of ['services', 'cpu', 'ram', 'hdd', 'ip', 'backup'] as const) {
    const atCap: Quota = { ...UNLIMITED, [r]: use[r] + demand[r] };
    assert.equal(exceededResource(atCap, use, demand), undefined, `${r} exactly at its cap fits`);
    const below: Quota = { ...UNLIMITED, [r]: use[r] + demand[r] - 1 };
    assert.equal(exceededResource(below, use, demand), r);
  }
});

test('a request that adds nothing to a resource passes it, even above its cap (a lowered quota)', () => {
  const quota: Quota = { ...UNLIMITED, backup: 5 };
  assert.equal(exceededResource(quota, use, orderDemand({ ...size, backup: 0 })), undefined);
  assert.equal(exceededResource(quota, use, orderDemand(size)), 'backup');
});

test('an upgrade adds only its growth over what the service counts for; shrinking adds nothing', () => {
  assert.deepEqual(upgradeDemand(size, { cpu: 4, ram: 2, hdd: 40, ip: 3, backup: 5 }), {
    services: 0,
    cpu: 2,
    ram: 0,
    hdd: 0,
    ip: 2,
    backup: 0,
  });
});

test('a service with upgrades waiting counts for the largest size of each resource', () => {
  assert.deepEqual(
    countedSize(size, [
      { cpu: 4, ram: 2, hdd: 40, ip: 1, backup: 10 },
      { cpu: 1, ram: 8, hdd: 60, ip: 1, backup: 10 },
    ]),
    { cpu: 4, ram: 8, hdd: 60, ip: 1, backup: 10 },
  );
  assert.deepEqual(countedSize(size, []), size);
});

test('quota_exceeded names the resource, the quota, the use and what the request needs', () => {
  const quota: Quota = { ...UNLIMITED, ram: 14 };
  assert.throws(
    () => checkQuota(quota, use, orderDemand(size), 'order'),
    (err: unknown) => {
      assert.ok(err instanceof ApiError);
      assert.equal(err.code, 'quota_exceeded');
      assert.equal(err.status, 400);
      assert.equal(
        err.message,
        'Quota exceeded for ram: the quota is 14 GB, 12 GB in use, and this order needs 4 GB more',
      );
      return true;
    },
  );
  assert.throws(
    () => checkQuota({ ...UNLIMITED, services: 3 }, use, orderDemand(size), 'order'),
    /the quota is 3 services, 3 services in use, and this order needs 1 service more/,
  );
  assert.throws(
    () => checkQuota({ ...UNLIMITED, cpu: 7 }, use, upgradeDemand(size, { ...size, cpu: 4 }), 'upgrade'),
    /Quota exceeded for cpu: the quota is 7 vCore, 6 vCore in use, and this upgrade needs 2 vCore more/,
  );
  checkQuota(quota, use, orderDemand({ ...size, ram: 2 }), 'order');
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DriverError } from '../../src/drivers/driver.ts';
import { isNoDomain, run } from '../../src/drivers/libvirt/commands.ts';

const fail = (stderr: string) => run('sh', ['-c', `echo "${stderr}" >&2; exit 1`], 'Could not start the VM');

test('libvirt failures: readable message for the reseller, libvirt text only in the cause', async () => {
  const err = await fail('error: internal error: qemu unexpectedly closed the monitor').catch((e) => e);
  assert.ok(err instanceof DriverError);
  assert.equal(err.message, 'Could not start the VM');
  assert.equal(err.transient, false);
  assert.match(String((err.cause as Error).message), /qemu unexpectedly closed the monitor/);
});

test('lost connections, held locks and timeouts are transient (retried)', async () => {
  for (const stderr of [
    'error: failed to connect to the hypervisor',
    'error: Timed out during operation: cannot acquire state change lock',
    'error: End of file while reading data: Input/output error',
  ]) {
    const err = await fail(stderr).catch((e) => e);
    assert.equal(err.transient, true, stderr);
    assert.match(err.message, /will retry/);
  }
  const slow = await run('sleep', ['5'], 'Could not stop the VM', 100).catch((e) => e);
  assert.equal(slow.transient, true, 'a command that hangs is killed and retried');
});

test('"no such domain" is recognised, so idempotent operations accept it', async () => {
  assert.equal(isNoDomain(await fail("error: failed to get domain 'vrp-x'").catch((e) => e)), true);
  assert.equal(
    isNoDomain(await fail('error: Domain not found: no domain with matching name').catch((e) => e)),
    true,
  );
  assert.equal(isNoDomain(await fail('error: some other failure').catch((e) => e)), false);
});

/**
 * With the libvirt driver, an OS template without an image on the hosts
 * cannot become a VM, so ordering it is refused at once (400 template_unavailable) instead of
 * failing at create. The API process never runs a driver: the catalogue says it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DEMO_CATALOG } from '../../src/store/demo-catalog.ts';
import { call, createTestApp, type TestApp } from '../helpers/app.ts';
import { testStores } from '../helpers/stores.ts';

const product = DEMO_CATALOG.products[0]!;
const [debian, ubuntu] = DEMO_CATALOG.os_templates;

function order(templateId: string) {
  return {
    product_id: product.id,
    domain_name: 'vm.example.com',
    template_id: templateId,
    cpu: product.config.cpu.min,
    ram: product.config.ram.min,
    hdd: product.config.hdd.min,
    ip: product.config.ip.min,
    backup: product.config.backup.min,
  };
}

for (const store of testStores()) {
  describe(`orders of templates without an image (${store})`, () => {
    let libvirt: TestApp;
    let simulated: TestApp;
    before(async () => {
      libvirt = await createTestApp({ VRP_DRIVER: 'libvirt' }, { store });
      simulated = await createTestApp({}, { store });
    });
    after(async () => {
      await libvirt?.close();
      await simulated?.close();
    });

    test('libvirt: refused at order time, the others still orderable', async () => {
      await libvirt.ctx.store.db
        .updateTable('os_templates')
        .set({ image: '/var/lib/vrp/images/debian-12.qcow2' })
        .where('id', '=', debian!.id)
        .execute();
      libvirt.ctx.catalog.invalidate();
      const token = await libvirt.token();
      const refused = await call(libvirt, token, 'POST', 'service/create-order', order(ubuntu!.id));
      assert.equal(refused.status, 400);
      assert.equal(refused.body.error_code, 'template_unavailable');
      assert.match(refused.body.message, /Ubuntu 24\.04 LTS.*no image/);
      const services = await libvirt.ctx.store.db.selectFrom('services').select('id').execute();
      assert.deepEqual(services, [], 'nothing was ordered');

      const ok = await call(libvirt, token, 'POST', 'service/create-order', order(debian!.id));
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
    });

    test("a template that is not the product's is still invalid_template, checked first", async () => {
      const token = await libvirt.token();
      const res = await call(
        libvirt,
        token,
        'POST',
        'service/create-order',
        order('00000000-0000-4000-8000-000000000000'),
      );
      assert.equal(res.body.error_code, 'invalid_template');
    });

    test('the simulated driver needs no images: the same order is accepted', async () => {
      const token = await simulated.token();
      const res = await call(simulated, token, 'POST', 'service/create-order', order(ubuntu!.id));
      assert.equal(res.status, 200, JSON.stringify(res.body));
    });
  });
}

/**
 * `vrp catalog import` with VRP_DRIVER=libvirt says which OS templates no VM
 * can be created from as seen from this machine (no image, or an image path that does not
 * exist), on stderr, and imports anyway (the images may live on the hosts only).
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { DEMO_CATALOG } from '../../src/store/demo-catalog.ts';
import { ownDataDir, vrpInProcess } from '../helpers/cli.ts';

test('catalog import warns about images libvirt cannot use, and still imports', async (t) => {
  // In this process (test/helpers/cli.ts): what is checked is what the command prints and its code.
  const dataDir = ownDataDir(t, 'vrp-cli-images-');
  const vrp = (args: string[], env: Record<string, string>) =>
    vrpInProcess(args, { VRP_DATA_DIR: dataDir, VRP_LOG_LEVEL: 'silent', ...env });
  const present = join(dataDir, 'debian.qcow2');
  writeFileSync(present, '');
  const missing = join(dataDir, 'absent', 'ubuntu.qcow2');
  const [debian, ubuntu, ...rest] = DEMO_CATALOG.os_templates;
  const file = join(dataDir, 'catalog.json');
  writeFileSync(
    file,
    JSON.stringify({
      ...DEMO_CATALOG,
      os_templates: [{ ...debian, image: present }, { ...ubuntu, image: missing }, ...rest],
    }),
  );

  const r = await vrp(['catalog', 'import', file], { VRP_DRIVER: 'libvirt' });
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /imported 3 products, 8 plans, 4 OS templates/);
  const warnings = r.err.split('\n').filter(Boolean);
  assert.deepEqual(warnings, [
    `vrp: warning: OS template "Ubuntu 24.04 LTS": image ${missing} does not exist on this machine`,
    'vrp: warning: OS template "Rocky Linux 9" has no image: orders for it are refused',
    'vrp: warning: OS template "AlmaLinux 9" has no image: orders for it are refused',
  ]);
  const exported = (await vrp(['catalog', 'export'], {})).json();
  assert.equal(
    exported.os_templates.find((t: { id: string }) => t.id === ubuntu!.id).image,
    missing,
    'imported as given',
  );

  const simulated = await vrp(['catalog', 'import', file], { VRP_DRIVER: 'simulated' });
  assert.equal(simulated.code, 0, simulated.err);
  assert.equal(simulated.err, '', 'the simulated driver needs no images: nothing to warn about');
});

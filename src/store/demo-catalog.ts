import type { Kysely } from 'kysely';
import { parseCatalogFile } from '../domain/catalog-file.ts';
import { applyCatalog, lockCatalog } from './catalog-import.ts';
import { countProducts } from './repos/products.ts';
import type { Database } from './schema.ts';

/** The catalogue a fresh store gets (unless VRP_DEMO=0). Fixed ids, so docs and tests can name them. */
export const DEMO_CATALOG = {
  os_templates: [
    { id: '6f1c3a52-0d1e-4c1b-9a51-0e2f8d3b7a01', name: 'Debian 12', image: null },
    { id: '6f1c3a52-0d1e-4c1b-9a51-0e2f8d3b7a02', name: 'Ubuntu 24.04 LTS', image: null },
    { id: '6f1c3a52-0d1e-4c1b-9a51-0e2f8d3b7a03', name: 'Rocky Linux 9', image: null },
    { id: '6f1c3a52-0d1e-4c1b-9a51-0e2f8d3b7a04', name: 'AlmaLinux 9', image: null },
  ],
  products: [
    {
      id: '3b0d6a8e-5f4c-4e2a-8b1d-7c9e2f1a0b01',
      name: 'VPS Starter',
      template: 'kvm',
      config: {
        ram: { min: 1, max: 8 },
        ip: { min: 1, max: 4 },
        cpu: { min: 1, max: 4 },
        hdd: { min: 20, max: 160 },
        backup: { min: 10, max: 100 },
      },
      os_templates: [
        '6f1c3a52-0d1e-4c1b-9a51-0e2f8d3b7a01',
        '6f1c3a52-0d1e-4c1b-9a51-0e2f8d3b7a02',
        '6f1c3a52-0d1e-4c1b-9a51-0e2f8d3b7a03',
      ],
      plans: [
        {
          id: '9a4e1c20-7b3d-4f5a-a1c2-d3e4f5a6b701',
          name: 'Starter S',
          cpu: 1,
          ram: 1,
          hdd: 20,
          price: 4.5,
        },
        { id: '9a4e1c20-7b3d-4f5a-a1c2-d3e4f5a6b702', name: 'Starter M', cpu: 2, ram: 2, hdd: 40, price: 8 },
        { id: '9a4e1c20-7b3d-4f5a-a1c2-d3e4f5a6b703', name: 'Starter L', cpu: 2, ram: 4, hdd: 80, price: 14 },
      ],
    },
    {
      id: '3b0d6a8e-5f4c-4e2a-8b1d-7c9e2f1a0b02',
      name: 'VPS Business',
      template: 'kvm',
      config: {
        ram: { min: 4, max: 32 },
        ip: { min: 1, max: 8 },
        cpu: { min: 2, max: 8 },
        hdd: { min: 80, max: 640 },
        backup: { min: 20, max: 200 },
      },
      os_templates: [
        '6f1c3a52-0d1e-4c1b-9a51-0e2f8d3b7a01',
        '6f1c3a52-0d1e-4c1b-9a51-0e2f8d3b7a02',
        '6f1c3a52-0d1e-4c1b-9a51-0e2f8d3b7a03',
        '6f1c3a52-0d1e-4c1b-9a51-0e2f8d3b7a04',
      ],
      plans: [
        {
          id: '9a4e1c20-7b3d-4f5a-a1c2-d3e4f5a6b711',
          name: 'Business 4',
          cpu: 2,
          ram: 4,
          hdd: 80,
          price: 19,
        },
        {
          id: '9a4e1c20-7b3d-4f5a-a1c2-d3e4f5a6b712',
          name: 'Business 8',
          cpu: 4,
          ram: 8,
          hdd: 160,
          price: 35,
        },
        {
          id: '9a4e1c20-7b3d-4f5a-a1c2-d3e4f5a6b713',
          name: 'Business 16',
          cpu: 8,
          ram: 16,
          hdd: 320,
          price: 65,
        },
      ],
    },
    {
      id: '3b0d6a8e-5f4c-4e2a-8b1d-7c9e2f1a0b03',
      name: 'Storage VPS',
      template: 'kvm',
      config: {
        ram: { min: 1, max: 16 },
        ip: { min: 1, max: 2 },
        cpu: { min: 1, max: 4 },
        hdd: { min: 250, max: 4000 },
        backup: { min: 0, max: 50 },
      },
      os_templates: ['6f1c3a52-0d1e-4c1b-9a51-0e2f8d3b7a01', '6f1c3a52-0d1e-4c1b-9a51-0e2f8d3b7a02'],
      plans: [
        {
          id: '9a4e1c20-7b3d-4f5a-a1c2-d3e4f5a6b721',
          name: 'Storage 500',
          cpu: 1,
          ram: 2,
          hdd: 500,
          price: 12,
        },
        {
          id: '9a4e1c20-7b3d-4f5a-a1c2-d3e4f5a6b722',
          name: 'Storage 2000',
          cpu: 2,
          ram: 4,
          hdd: 2000,
          price: 39,
        },
      ],
    },
  ],
};

/**
 * Loads the demo catalogue into a store that has no products; true if it did. The store is looked
 * at under the catalogue's lock: a catalogue imported at the same moment (`vrp catalog import`
 * beside the first start) is either seen, and kept, or imported after the demo, replacing it.
 */
export async function seedDemoCatalog(db: Kysely<Database>, now: number): Promise<boolean> {
  // A store with a catalogue (every start but the first) is only read.
  if ((await countProducts(db)) > 0) return false;
  return db.transaction().execute(async (tx) => {
    await lockCatalog(tx, now);
    if ((await countProducts(tx)) > 0) return false;
    await applyCatalog(tx, parseCatalogFile(DEMO_CATALOG), now);
    return true;
  });
}

import { type NewService, newServiceRow } from '../../src/store/repos/services.ts';

/**
 * A services row of the smallest amounts (1 vCPU, 1 GB, 20 GB, one address, no backup space),
 * for tests that write services straight into a store: what they care about given, the rest
 * the same everywhere (client `c1`, product `p1`, template `t1`, user root).
 */
export function plainServiceRow(
  s: Pick<NewService, 'id' | 'resellerId' | 'domainName' | 'now'> & Partial<NewService>,
) {
  return newServiceRow({
    clientId: 'c1',
    productId: 'p1',
    templateId: 't1',
    username: 'root',
    passwordEnc: 'x',
    cpu: 1,
    ram: 1,
    hdd: 20,
    ipCount: 1,
    backup: 0,
    ...s,
  });
}

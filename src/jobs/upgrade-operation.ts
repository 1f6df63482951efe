import { ApiError } from '../domain/errors.ts';
import { type Amounts, checkBounds, shrinksDisk, UPGRADE_FIELD_NAMES } from '../domain/orders.ts';
import type { Catalog } from '../store/catalog-cache.ts';
import type { DialectFeatures } from '../store/database.ts';
import { usedBackupGb } from '../store/repos/backups.ts';
import { checkUpgradeQuota } from '../store/repos/quotas.ts';
import type { Operation } from './queue.ts';

/**
 * An upgrade to `amounts`, as one operation for the reseller's route, the operator's and a
 * retried job: within the product's bounds, the disk never shrinks, the backup space never below
 * what the backups use, and within the reseller's quota (checked in the transaction that accepts it).
 */
export function upgradeOperation(
  catalog: Catalog,
  features: DialectFeatures,
  amounts: Amounts,
): Extract<Operation, { action: 'upgrade' }> {
  return {
    action: 'upgrade',
    params: amounts,
    check: async (service, tx) => {
      const product = catalog.byId.get(service.productId);
      if (!product)
        throw new ApiError('product_not_found', 'The product of this service is no longer offered');
      checkBounds(product, amounts, UPGRADE_FIELD_NAMES);
      if (shrinksDisk(service.hdd, amounts.hdd)) {
        throw new ApiError(
          'disk_shrink_not_supported',
          `HDD cannot go below the current ${service.hdd} GB; disks only grow`,
        );
      }
      const used = await usedBackupGb(tx, service.id);
      if (amounts.backup < used) {
        throw new ApiError(
          'backup_quota_exceeded',
          `BACKUP cannot go below the ${used} GB the service's backups use now; delete backups first`,
        );
      }
      await checkUpgradeQuota(tx, features, service, amounts);
    },
  };
}

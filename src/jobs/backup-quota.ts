import type { Kysely } from 'kysely';
import { ApiError } from '../domain/errors.ts';
import { roundGb, sumGb } from '../domain/sizes.ts';
import { listBackups } from '../store/repos/backups.ts';
import type { Service } from '../store/repos/services.ts';
import type { Database } from '../store/schema.ts';

/**
 * Can one more backup fit in the service's `backup` GB? Its size is not known before it is
 * taken: the latest backup's size is the estimate. Scheduled backups may be rotated out
 * (oldest first) to make room; manual ones never are (docs/design/contract.md#backups).
 */
export async function checkBackupQuota(db: Kysely<Database>, service: Service): Promise<void> {
  if (service.backup <= 0) {
    throw new ApiError(
      'backups_disabled',
      'This service has no backup space (backup is 0 GB); upgrade BACKUP first',
    );
  }
  const backups = (await listBackups(db, service.id)).filter((b) => b.status !== 'failed');
  const used = sumGb(backups.map((b) => b.sizeGb));
  const rotatable = sumGb(
    backups.filter((b) => b.kind === 'scheduled' && b.status === 'available').map((b) => b.sizeGb),
  );
  const estimate = backups.find((b) => b.status === 'available')?.sizeGb ?? 0;
  if (sumGb([used, -rotatable, estimate]) > service.backup) {
    throw new ApiError(
      'backup_quota_exceeded',
      `Backups use ${used} of ${service.backup} GB and a new one needs about ${roundGb(estimate)} GB; delete a backup or upgrade BACKUP`,
    );
  }
}

/** Backups to rotate out (oldest scheduled first) so that `needGb` more fits; undefined if it cannot. */
export function planRotation(
  backups: readonly { id: string; kind: string; status: string; sizeGb: number; createdAt: number }[],
  quotaGb: number,
  needGb: number,
): string[] | undefined {
  const live = backups.filter((b) => b.status !== 'failed');
  let used = sumGb(live.map((b) => b.sizeGb));
  const victims: string[] = [];
  const candidates = live
    .filter((b) => b.kind === 'scheduled' && b.status === 'available')
    .sort((a, b) => a.createdAt - b.createdAt);
  for (const c of candidates) {
    if (sumGb([used, needGb]) <= quotaGb) break;
    victims.push(c.id);
    used = sumGb([used, -c.sizeGb]);
  }
  return sumGb([used, needGb]) <= quotaGb ? victims : undefined;
}

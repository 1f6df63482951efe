import { uuidv7 } from '../domain/ids.ts';
import { generatePassword } from '../domain/passwords.ts';
import type { SecretBox } from '../domain/secret-box.ts';
import { randomPoolBytes } from '../random-pool.ts';
import type { Store } from './database.ts';
import { createGroupWriter } from './group-insert.ts';
import { type AuditContext, auditRow } from './repos/audit.ts';
import { insertIdempotencyKey } from './repos/idempotency-keys.ts';
import { checkOrderQuota, findQuotaFast } from './repos/quotas.ts';
import { insertService, newServiceRow } from './repos/services.ts';

/** An order already checked against its product (domain/orders.ts). */
export interface Order {
  readonly resellerId: string;
  readonly clientId: string;
  readonly productId: string;
  readonly templateId: string;
  readonly domainName: string;
  readonly cpu: number;
  readonly ram: number;
  readonly hdd: number;
  readonly ipCount: number;
  readonly backup: number;
  /** OpenSSH public keys for root, already checked and normalised (domain/ssh-keys.ts). */
  readonly sshKeys?: readonly string[];
}

/** The new service's login: the password is shown once, in the answer to the order. */
export interface PlacedOrder {
  readonly id: string;
  readonly username: string;
  readonly password: string;
}

export interface OrderPlacer {
  /**
   * Records a new `pending` service with a generated root password. With an idempotency key, the
   * service and the key are written together or not at all; a key already recorded fails with
   * the database's unique violation (the caller answers as the first request did). A reseller
   * with a quota has it checked in the same transaction (ApiError `quota_exceeded`). With an
   * audit context, its entry is written with the service, all or none.
   */
  place(
    order: Order,
    now: number,
    idempotency?: { readonly key: string; readonly requestHash: string },
    audit?: AuditContext,
  ): Promise<PlacedOrder>;
}

export function createOrderPlacer(
  store: Pick<Store, 'db' | 'features' | 'reads'>,
  secretBox: SecretBox,
): OrderPlacer {
  const { db, features, reads } = store;
  // Orders without a key or a quota need no transaction of their own: a burst of them is
  // group-committed. Whether there is a quota is one prepared read (a Kysely query there added
  // about a sixth to an order's CPU time in the bench); a quota set while such an order is under
  // way does not apply to it.
  const services = createGroupWriter(db, features);
  return {
    async place(order, now, idempotency, audit) {
      // Ids are time-ordered by the real time, like every insert's place in the index.
      const id = uuidv7(Date.now(), randomPoolBytes(16));
      const password = generatePassword(randomPoolBytes);
      const row = newServiceRow({
        ...order,
        id,
        username: 'root',
        passwordEnc: secretBox.seal(password),
        now,
      });
      const subject = { target: { type: 'service', id }, serviceId: id, resellerId: order.resellerId };
      const entry = audit && auditRow(audit, subject, now);
      const quota = await findQuotaFast(reads, order.resellerId);
      if (!idempotency && !quota) {
        await services.insert(entry ? { services: row, audit_log: entry } : { services: row });
      } else {
        await db.transaction().execute(async (tx) => {
          if (quota) await checkOrderQuota(tx, features, order.resellerId, amountsOf(order));
          await insertService(tx, row);
          if (entry) await tx.insertInto('audit_log').values(entry).execute();
          if (idempotency) {
            await insertIdempotencyKey(tx, {
              resellerId: order.resellerId,
              key: idempotency.key,
              requestHash: idempotency.requestHash,
              response: JSON.stringify({ service_id: id }),
              now,
            });
          }
        });
      }
      return { id, username: row.username, password };
    },
  };
}

const amountsOf = (o: Order) => ({ cpu: o.cpu, ram: o.ram, hdd: o.hdd, ip: o.ipCount, backup: o.backup });

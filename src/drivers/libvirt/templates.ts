import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import type { Database } from '../../store/schema.ts';
import { DriverError } from '../driver.ts';

export interface Template {
  /** The base disk (qcow2) a VM's disk is layered over. */
  readonly disk: string;
  /** For kernel-boot templates (a directory with vmlinuz, initrd.img, disk.qcow2). */
  readonly kernel?: { readonly kernel: string; readonly initrd: string; readonly cmdline: string };
}

/**
 * An OS template's image on the hosts (catalogue `os_templates[].image`): a qcow2 cloud image
 * (Debian, Ubuntu, Rocky... generic cloud images boot from their own disk and read the NoCloud
 * seed), or a directory holding `vmlinuz`, `initrd.img` and `disk.qcow2` (booted directly).
 */
export async function resolveTemplate(db: Kysely<Database>, templateId: string): Promise<Template> {
  const row = await db
    .selectFrom('os_templates')
    .select(['name', 'image'])
    .where('id', '=', templateId)
    .executeTakeFirst();
  if (!row?.image) {
    throw new DriverError(
      `OS template ${row?.name ?? templateId} has no image on the hosts; the provider must set one`,
      {
        transient: false,
      },
    );
  }
  return resolveImage(row.image, `The image of OS template ${row.name}`);
}

/**
 * An image file or directory as a Template (a qcow2, or a directory with `vmlinuz`,
 * `initrd.img` and `disk.qcow2`); `what` names it in the error when it is missing.
 */
export async function resolveImage(image: string, what: string): Promise<Template> {
  const s = await stat(image).catch(() => undefined);
  if (!s) throw new DriverError(`${what} is missing on the host`, { transient: false });
  if (s.isDirectory()) {
    return {
      disk: join(image, 'disk.qcow2'),
      kernel: {
        kernel: join(image, 'vmlinuz'),
        initrd: join(image, 'initrd.img'),
        cmdline: 'console=ttyS0 quiet panic=-1',
      },
    };
  }
  return { disk: image };
}

import type { TaskTable } from '../task.ts';
import { backupCreate } from './backup-create.ts';
import { backupDelete } from './backup-delete.ts';
import { backupRestore } from './backup-restore.ts';
import { create } from './create.ts';
import { migrate } from './migrate.ts';
import { reinstall } from './reinstall.ts';
import { rescue } from './rescue.ts';
import { resetPassword } from './reset-password.ts';
import { restart } from './restart.ts';
import { start } from './start.ts';
import { stop } from './stop.ts';
import { suspend } from './suspend.ts';
import { terminate } from './terminate.ts';
import { unrescue } from './unrescue.ts';
import { unsuspend } from './unsuspend.ts';
import { upgrade } from './upgrade.ts';

/** One task per job action. */
export const TASKS: TaskTable = {
  create,
  start,
  stop,
  restart,
  suspend,
  unsuspend,
  upgrade,
  reset_password: resetPassword,
  terminate,
  backup_create: backupCreate,
  backup_restore: backupRestore,
  backup_delete: backupDelete,
  migrate,
  reinstall,
  rescue,
  unrescue,
};

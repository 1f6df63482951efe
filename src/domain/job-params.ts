/**
 * The parameters each job action carries, as one map keyed by `JobAction`: the types the routes,
 * the scheduler and the tasks share, and the check a job's parameters pass when it is enqueued
 * and again when it is read back from the store (a row written by an older version, or by hand).
 */

import { Ajv, type ValidateFunction } from 'ajv';
import { type Static, type TSchema, Type } from 'typebox';
import type { JobAction } from './status-machine.ts';

const None = Type.Object({});
const Amount = Type.Integer({ minimum: 0 });
const BackupId = Type.Object({ backup_id: Type.String({ minLength: 1 }) });

const JOB_PARAMS = {
  create: None,
  start: None,
  stop: None,
  restart: None,
  suspend: Type.Object({ reason: Type.Union([Type.String(), Type.Null()]) }),
  unsuspend: None,
  terminate: None,
  upgrade: Type.Object({ cpu: Amount, ram: Amount, hdd: Amount, ip: Amount, backup: Amount }),
  /** The new password, sealed like the stored one (auth/secret-box.ts): never plain text in a job. */
  reset_password: Type.Object({ password_enc: Type.String({ minLength: 1 }) }),
  /**
   * `backup_id` is absent only on the record of a scheduled slot that made no backup (a
   * `skipped` job, which never runs); `schedule_id` and `slot_at` name that slot.
   */
  backup_create: Type.Object({
    backup_id: Type.Optional(Type.String({ minLength: 1 })),
    kind: Type.Union([Type.Literal('manual'), Type.Literal('scheduled')]),
    schedule_id: Type.Optional(Type.String()),
    slot_at: Type.Optional(Type.Integer()),
  }),
  backup_restore: BackupId,
  backup_delete: BackupId,
  /**
   * `host_id`: the destination the operator chose, or null for the placement rule's choice.
   * `from_host_id`: the host the service was on when the migration was asked for (an
   * evacuation's counts and the jobs list show it). `evacuation`: queued by an evacuation.
   */
  migrate: Type.Object({
    host_id: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
    from_host_id: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
    evacuation: Type.Boolean(),
  }),
  /**
   * The template to install (one of the product's), the new password sealed like the stored
   * one, and the OpenSSH public keys for root (checked by domain/ssh-keys.ts when accepted).
   */
  reinstall: Type.Object({
    template_id: Type.String({ minLength: 1 }),
    password_enc: Type.String({ minLength: 1 }),
    ssh_keys: Type.Array(Type.String({ minLength: 1 })),
  }),
  /** The rescue system's login: a user name and its password, sealed. */
  rescue: Type.Object({
    username: Type.String({ minLength: 1 }),
    password_enc: Type.String({ minLength: 1 }),
  }),
  /** `expired`: queued because the rescue reached its time limit, not by a request. */
  unrescue: Type.Object({ expired: Type.Boolean() }),
} as const satisfies Record<JobAction, TSchema>;

/** The parameters of each action's job. */
export type JobParams = { readonly [A in JobAction]: Readonly<Static<(typeof JOB_PARAMS)[A]>> };

/**
 * Each compiled once, at its first check, as a regular expression is: a check is then a few
 * property tests (every job, twice). Compiled when first needed rather than when the module
 * loads: compiling all of them took a fifth of a second of every process's start on a loaded
 * machine, and most processes meet a few actions only. With Ajv, which the HTTP layer loads
 * anyway (TypeBox's own compiler would add ~6 MB of resident memory to every process for these
 * few schemas).
 */
const ajv = new Ajv({ allErrors: false, strict: false });
const CHECKS = new Map<string, ValidateFunction>();
function checkOf(action: JobAction): ValidateFunction | undefined {
  let check = CHECKS.get(action);
  if (check) return check;
  if (!Object.hasOwn(JOB_PARAMS, action)) return undefined;
  check = ajv.compile(JOB_PARAMS[action]);
  CHECKS.set(action, check);
  return check;
}

/** Why `value` is not the parameters of an `action` job, or undefined if it is. */
export function jobParamsProblem(action: JobAction, value: unknown): string | undefined {
  const check = checkOf(action);
  if (!check) return `${String(action)} is not a job action`;
  if (check(value)) return undefined;
  const first = check.errors?.[0];
  return first ? `${first.instancePath || 'the parameters'} ${first.message}` : 'invalid parameters';
}

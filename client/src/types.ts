/**
 * The payload types, all derived from the generated client/src/generated/openapi.ts (which
 * comes from docs/openapi.json): nothing here restates a schema.
 */
import type { components, operations } from './generated/openapi.ts';

type Schemas = components['schemas'];
type Json<R> = R extends { content: { 'application/json': infer J } } ? J : never;
type Success<Op extends keyof operations> = operations[Op]['responses'] extends { 200: infer R }
  ? Json<R>
  : never;

/** What an operation answers in `data` (variant B: typed JSON). */
export type Data<Op extends keyof operations> =
  Extract<Success<Op>, { status: 'Success' }> extends { data: infer D } ? D : never;
/** The JSON body an operation takes. */
export type Body<Op extends keyof operations> = NonNullable<
  operations[Op]['requestBody']
>['content']['application/json'];

export type Version = Schemas['Version'];
export type Product = Schemas['Product'];
export type Plan = Schemas['Plan'];
export type ServiceDetails = Schemas['ServiceDetails'];
export type ServiceStatus = Schemas['ServiceStatus'];
/** A service's status: `pending`, `running`, ... (docs/design/contract.md#service-statuses). */
export type Status = ServiceStatus['status'];
export type Job = Schemas['Job'];
/** The rescue system's login, as `rescue` answers it. */
export type RescueLogin = Data<'rescue'>;
export type Backup = Schemas['Backup'];
export type BackupSchedule = Schemas['BackupSchedule'];
/** An order: product_id, domain_name, template_id and the five amounts. */
export type Order = Body<'createOrder'>;
/** What an order answers: `[{ service_id }]`. */
export type OrderedServices = Data<'createOrder'>;
/** An event of the feed (`service.status_changed` or `job.finished`). */
export type VrpEvent = Data<'events'>[number];
export type EventType = VrpEvent['type'];
export type Webhook = Data<'webhooks'>[number];
/** A new webhook, with its `secret` (shown only this once). */
export type CreatedWebhook = Data<'createWebhook'>;
export type WebhookRequest = Body<'createWebhook'>;
export type Usage = Data<'usage'>;
/** The reverse DNS of one of a service's addresses: `{ip, ptr}`, `ptr` null when it has no record. */
export type AddressPtr = Data<'rdns'>[number];

type UpgradeBody = Omit<Body<'upgrade'>, 'service_id'>;
/** The five amounts of an upgrade, in lower case: the API's CPU, RAM, HDD, IP and BACKUP. */
export type UpgradeAmounts = { [K in keyof UpgradeBody as Lowercase<K & string>]: UpgradeBody[K] };

type ScheduleBody = Body<'createBackupSchedule'>;
/** A backup schedule to create: `time` is BsTime (`HH:MM` UTC), `days` BSDays (a list or `mon,thu`). */
export interface ScheduleRequest {
  time: ScheduleBody['BsTime'];
  days: ScheduleBody['BSDays'] | readonly ScheduleBody['BSDays'][];
}

/**
 * A reinstall: `templateId` one of the product's templates; `password` the new root password
 * (absent: the server generates one, details show it); `sshKeys` OpenSSH public keys for root
 * (absent: the service keeps its keys; `[]` removes them).
 */
export interface ReinstallRequest {
  templateId: Body<'reinstall'>['template_id'];
  password?: NonNullable<Body<'reinstall'>['password']>;
  sshKeys?: NonNullable<Body<'reinstall'>['ssh_keys']>;
}

/** What an operation that answers `[]` tells: the job it queued, if any, and the server's message. */
export interface Accepted {
  /** The job queued (see jobs and status); null when nothing was to be done or no job runs it. */
  jobId: string | null;
  /** Empty, or why nothing was done (the target status was reached already). */
  message: string;
}

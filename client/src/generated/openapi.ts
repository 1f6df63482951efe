/**
 * Generated from docs/openapi.json by openapi-typescript (`npm run sdk:types`); do not edit.
 * test/client/types-drift.test.ts fails when this file differs from what the generator writes.
 */

export interface paths {
  '/.well-known/oauth-authorization-server/vps_reseller_provider/public': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * The authorization server metadata (RFC 8414)
     * @description Where RFC 8414 puts it for the issuer {base_url}, so that OAuth client libraries find the token endpoint by themselves.
     */
    get: operations['authorizationServerMetadata'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/docs': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * Redirects to the API reference
     * @description Redirects to /vps_reseller_provider/public/docs.
     */
    get: operations['referenceShortcut'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/healthz': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * Liveness probe
     * @description Answers while the process serves requests; it reads nothing else.
     */
    get: operations['healthz'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/metrics': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * Prometheus metrics
     * @description This process’s metrics in the Prometheus text format, and the job queue’s from the store.
     */
    get: operations['metrics'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/readyz': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * Readiness probe
     * @description Answers 200 when the store can be reached, else 503.
     */
    get: operations['readyz'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/events': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * The reseller's events, oldest first
     * @description Events after the event `after` (from the oldest kept when absent), oldest first, at most `limit` (1 to 1000, default 100). Page by passing the last event_id received as `after`; an empty list means there is nothing newer yet. Events are kept at least 7 days; an `after` that names no event of the reseller (unknown or no longer kept) is 400 validation_failed.
     */
    get: operations['events'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/product/{product_uuid}/plans': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * List the default plans of a product
     * @description Ready-made amounts within the product’s bounds, with their price.
     */
    get: operations['plans'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/products': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * List the products
     * @description Every product on offer, with the bounds of its amounts and its OS templates.
     */
    get: operations['products'];
    put?: never;
    /**
     * List the products
     * @description The same as `GET`, as variant A of the interface sends it.
     */
    post: operations['productsPost'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/service/{service_id}/backup-schedule': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * List the service’s backup schedules
     * @description Every schedule of the service, with the time of its next backup.
     */
    get: operations['backupSchedules'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/service/{service_id}/backup-schedule/create': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Schedule backups
     * @description Takes effect at once, no job. The same time and days again answers 200 and adds nothing; at most 10 per service (400 `schedule_limit_reached`).
     */
    post: operations['createBackupSchedule'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/service/{service_id}/backup-schedule/delete/{backup_schedule_id}': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Delete a backup schedule
     * @description Takes effect at once, no job; the backups it made stay.
     */
    post: operations['deleteBackupSchedule'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/service/{service_id}/backup/create': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Back up the service
     * @description A manual backup; the oldest scheduled backups are rotated out to make room within the service’s `backup` GB (400 `backup_quota_exceeded` if that is not enough, `backups_disabled` if it is 0). Queued as a job behind the service’s earlier ones; answers `[]` as soon as the job is recorded, with its id in `X-Job-Id` (see `jobs` and `status`).
     */
    post: operations['createBackup'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/service/{service_id}/backup/delete/{backup_id}': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Delete a backup
     * @description Frees the backup’s space. Queued as a job behind the service’s earlier ones; answers `[]` as soon as the job is recorded, with its id in `X-Job-Id` (see `jobs` and `status`).
     */
    post: operations['deleteBackup'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/service/{service_id}/backup/restore/{backup_id}': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Restore a backup
     * @description Puts the server’s disk back as the backup holds it. Queued as a job behind the service’s earlier ones; answers `[]` as soon as the job is recorded, with its id in `X-Job-Id` (see `jobs` and `status`).
     */
    post: operations['restoreBackup'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/service/{service_id}/backups': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * List the service’s backups
     * @description Every backup of the service, with its status and size.
     */
    get: operations['backups'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/service/{service_id}/console': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Open the console in the browser
     * @description A one-time link to the server’s console in a browser: it opens within 60 seconds, once, and the session it starts lasts at most VRP_CONSOLE_SESSION_MAX (1 hour by default), ending earlier, for good, when the service leaves `running` or `rescue` (even for a moment: a restart, a suspension lifted), when the reseller is disabled, or when the application that asked for it is disabled or its tokens are revoked. Only while the service is `running` or `rescue` (400 `invalid_state` otherwise); 503 `console_unavailable` when this server reaches no hypervisor.
     */
    post: operations['openConsole'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/service/{service_id}/create': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Provision the server
     * @description Creates the virtual server of a `pending` (or `failed`) service. Queued as a job behind the service’s earlier ones; answers `[]` as soon as the job is recorded, with its id in `X-Job-Id` (see `jobs` and `status`).
     */
    post: operations['create'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/service/{service_id}/details': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * The service’s details
     * @description Everything about the service: its amounts, addresses, login (`username`, `password`), status, the operations it accepts now and its current job.
     */
    get: operations['details'];
    put?: never;
    /**
     * The service’s details
     * @description The same as `GET`, as variant A of the interface sends it.
     */
    post: operations['detailsPost'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/service/{service_id}/jobs': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * The service’s jobs
     * @description The jobs of the service, newest first: every operation that acted on the server.
     */
    get: operations['jobs'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/service/{service_id}/rdns': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * The PTR records of the service’s addresses
     * @description One entry per address the service holds (its IPv4 addresses, primary first, then its IPv6 address if it has one): `ptr` is the host name set for it, else the provider’s default, else null. A service without addresses (not created yet, terminated) has none. Without a DNS server configured by the provider: 400 `rdns_unavailable`.
     */
    get: operations['rdns'];
    put?: never;
    /**
     * Set the PTR record of one of the service’s addresses
     * @description Takes effect at once, no job: when the answer is 200 the DNS server answers the new record (`dig -x`). `ptr` null resets it to the provider’s default (or no record, without one). An address that is not the service’s is 400 `ip_not_of_service`; a `ptr` that is not a host name 400 `invalid_ptr`; a service being terminated 400 `invalid_state`. A DNS server that fails is 502 `rdns_backend_failed` and nothing changes. Answers every address’s PTR, as `GET`. Without a DNS server configured by the provider: 400 `rdns_unavailable`.
     */
    post: operations['setRdns'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/service/{service_id}/reinstall': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Reinstall the server
     * @description Rebuilds the server’s disk from `template_id` (one of its product’s templates; everything on the disk is lost) with a new root password and, optionally, new SSH keys. The addresses, amounts, backups and schedules stay; the server ends in the power state it had (`running` or `stopped`; other statuses 400 `invalid_state`). The next backup is a full one. Queued as a job behind the service’s earlier ones; answers `[]` as soon as the job is recorded, with its id in `X-Job-Id` (see `jobs` and `status`).
     */
    post: operations['reinstall'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/service/{service_id}/rescue': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Boot the rescue system
     * @description The server boots a rescue system with its own disk attached as the second disk (untouched until you mount it); status `rescuing`, then `rescue`. Answers the rescue system’s login, a new random password shown only here. A running or stopped service only (otherwise 400 `invalid_state`). The rescue ends by itself after VRP_RESCUE_MAX (details show `rescue_until`); `unrescue` ends it sooner. In rescue the service accepts `unrescue`, `suspend` and `terminate` only. Queued as a job like any operation, its id in `X-Job-Id`.
     */
    post: operations['rescue'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/service/{service_id}/reset-password': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Set a new root password
     * @description The password details will show once the job has run. Queued as a job behind the service’s earlier ones; answers `[]` as soon as the job is recorded, with its id in `X-Job-Id` (see `jobs` and `status`).
     */
    post: operations['resetPassword'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/service/{service_id}/restart': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Restart the server
     * @description Restarts a running server. Queued as a job behind the service’s earlier ones; answers `[]` as soon as the job is recorded, with its id in `X-Job-Id` (see `jobs` and `status`).
     */
    post: operations['restart'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/service/{service_id}/start': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Start the server
     * @description Starting a running server answers 200 and does nothing. Queued as a job behind the service’s earlier ones; answers `[]` as soon as the job is recorded, with its id in `X-Job-Id` (see `jobs` and `status`).
     */
    post: operations['start'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/service/{service_id}/status': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * The service’s status
     * @description The status, the operations the service accepts now and the job running (or next queued), if any: what a panel polls.
     */
    get: operations['status'];
    put?: never;
    /**
     * The service’s status
     * @description The same as `GET`, as variant A of the interface sends it.
     */
    post: operations['statusPost'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/service/{service_id}/stop': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Stop the server
     * @description Stopping a stopped server answers 200 and does nothing. Queued as a job behind the service’s earlier ones; answers `[]` as soon as the job is recorded, with its id in `X-Job-Id` (see `jobs` and `status`).
     */
    post: operations['stop'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/service/{service_id}/suspend': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Suspend the service
     * @description Powers the server off and locks it (billing). Suspending a suspended service answers 200 and does nothing. Queued as a job behind the service’s earlier ones; answers `[]` as soon as the job is recorded, with its id in `X-Job-Id` (see `jobs` and `status`).
     */
    post: operations['suspend'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/service/{service_id}/terminate': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Terminate the service
     * @description Releases the server, its addresses and backups; the record stays, `terminated`. Terminating a terminated service answers 200 and does nothing. Queued as a job behind the service’s earlier ones; answers `[]` as soon as the job is recorded, with its id in `X-Job-Id` (see `jobs` and `status`).
     */
    post: operations['terminate'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/service/{service_id}/unrescue': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Leave the rescue system
     * @description The server boots its own system again (status `starting`, then `running`). A service in `rescue` only (otherwise 400 `invalid_state`). Queued as a job behind the service’s earlier ones; answers `[]` as soon as the job is recorded, with its id in `X-Job-Id` (see `jobs` and `status`).
     */
    post: operations['unrescue'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/service/{service_id}/unsuspend': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Unsuspend the service
     * @description Returns the service to the power state it had before the suspension. Queued as a job behind the service’s earlier ones; answers `[]` as soon as the job is recorded, with its id in `X-Job-Id` (see `jobs` and `status`).
     */
    post: operations['unsuspend'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/service/{service_id}/upgrade': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Change the amounts
     * @description All five amounts, each within the product’s bounds. HDD cannot shrink (400 `disk_shrink_not_supported`); BACKUP cannot go below what the backups use (400 `backup_quota_exceeded`). Queued as a job behind the service’s earlier ones; answers `[]` as soon as the job is recorded, with its id in `X-Job-Id` (see `jobs` and `status`).
     */
    post: operations['upgrade'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/service/create-order': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Order a virtual server
     * @description Checks the amounts against the product’s bounds, the template against its `os_templates` and the optional `ssh_keys` (400 `invalid_ssh_key`), and records the service as `pending` with user `root` and a generated password; nothing is allocated until `create`. Variant A answers `{service_id, username, password}`, variant B `[{service_id}]`.
     */
    post: operations['createOrder'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/test-connection': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Check the credentials
     * @description Answers `[]` with the message "Connection successful" when the token is valid and has the scope `access`.
     */
    post: operations['testConnection'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/usage': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * The reseller's quota and current use
     * @description Per resource (services, cpu in vCores, ram, hdd and backup in GB, ip in addresses): the quota, null where unlimited, and the use, totals over the services that are not terminated (an upgrade still waiting counts at its new size where that is larger). Orders and upgrades beyond the quota answer 400 quota_exceeded.
     */
    get: operations['usage'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/version': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * The API version
     * @description The version of the interface this server implements.
     */
    get: operations['version'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/webhooks': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * List the reseller's webhooks
     * @description Oldest first, without their secrets.
     */
    get: operations['webhooks'];
    put?: never;
    /**
     * Register a webhook
     * @description Events of the types listed in `events` (all types when absent) are POSTed to `url`, signed per the Standard Webhooks specification with `secret`, which this answer alone shows. `url` is http(s) on a public address, on port 80, 443 or 1024-65535. At most 10 webhooks per reseller (400 webhook_limit_reached).
     */
    post: operations['createWebhook'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/api/v2/webhooks/{webhook_id}/delete': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Delete a webhook
     * @description Nothing more is sent to it, retries included. Another reseller's webhook is 404 webhook_not_found.
     */
    post: operations['deleteWebhook'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/docs': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * The API reference
     * @description An interactive reference of this document (Swagger UI), served by this server.
     */
    get: operations['reference'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/docs/{file}': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * A file of the API reference
     * @description The scripts, styles and icons the reference page loads.
     */
    get: operations['referenceFile'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/oauth/token': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Get an access token
     * @description OAuth 2.0 client credentials (RFC 6749 section 4.4). The application authenticates with HTTP Basic (`client_secret_basic`: `Authorization: Basic base64(client_id:client_secret)`) or with `client_id` and `client_secret` in the body (`client_secret_post`). Answers and errors are RFC 6749 bodies, not the envelope. Failed authentications are counted per address, each before its secret is checked; too many lock the address out for a while (429 `temporarily_unavailable`). Secret checks run a few at a time: too many waiting from one address get 429, in all 503 `temporarily_unavailable`, both with Retry-After.
     */
    post: operations['token'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/openapi.json': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * This OpenAPI document
     * @description The OpenAPI 3.1 document of this server, made from its routes (docs/openapi.json).
     */
    get: operations['openapiDocument'];
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/vps_reseller_provider/public/v2/service/create-order': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Order a virtual server (variant B’s path)
     * @description The same as `POST /vps_reseller_provider/public/api/v2/service/create-order`, at the path variant B of the interface gives.
     */
    post: operations['createOrderAlias'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
}
export type webhooks = Record<string, never>;
export interface components {
  schemas: {
    /** @description An error, in the envelope of the request (docs/design/contract.md#envelopes) */
    ErrorEnvelope: components['schemas']['ErrorEnvelopeB'] | components['schemas']['ErrorEnvelopeA'];
    /** Variant B error */
    ErrorEnvelopeB: {
      /** @constant */
      status: 'Error';
      /** @description What went wrong, for a person */
      message: string;
      data: unknown[];
      /**
       * @description docs/api.md, Error codes
       * @enum {string}
       */
      error_code:
        | 'validation_failed'
        | 'out_of_bounds'
        | 'invalid_template'
        | 'template_unavailable'
        | 'invalid_state'
        | 'service_busy'
        | 'service_id_mismatch'
        | 'idempotency_key_reused'
        | 'disk_shrink_not_supported'
        | 'backup_quota_exceeded'
        | 'backups_disabled'
        | 'quota_exceeded'
        | 'weak_password'
        | 'invalid_ssh_key'
        | 'schedule_limit_reached'
        | 'webhook_limit_reached'
        | 'invalid_envelope_variant'
        | 'invalid_cursor'
        | 'invalid_host_name'
        | 'host_name_taken'
        | 'host_driver_mismatch'
        | 'invalid_host_uri'
        | 'capacity_below_use'
        | 'same_host'
        | 'host_not_active'
        | 'host_unreachable'
        | 'ip_not_of_service'
        | 'invalid_ptr'
        | 'rdns_unavailable'
        | 'invalid_network'
        | 'gateway_outside_network'
        | 'range_outside_network'
        | 'prefix_too_small'
        | 'pool_overlap'
        | 'pool_name_taken'
        | 'unknown_host'
        | 'invalid_token'
        | 'insufficient_scope'
        | 'insufficient_role'
        | 'console_origin_refused'
        | 'https_required'
        | 'service_not_found'
        | 'backup_not_found'
        | 'backup_schedule_not_found'
        | 'product_not_found'
        | 'webhook_not_found'
        | 'reseller_not_found'
        | 'job_not_found'
        | 'host_not_found'
        | 'pool_not_found'
        | 'template_not_found'
        | 'plan_not_found'
        | 'application_not_found'
        | 'not_found'
        | 'method_not_allowed'
        | 'reseller_name_taken'
        | 'job_not_queued'
        | 'job_not_failed'
        | 'job_already_retried'
        | 'host_not_empty'
        | 'pool_in_use'
        | 'no_ipv6_pool'
        | 'product_in_use'
        | 'template_in_use'
        | 'invalidates_services'
        | 'request_timeout'
        | 'payload_too_large'
        | 'unsupported_media_type'
        | 'headers_too_large'
        | 'rate_limited'
        | 'internal_error'
        | 'rdns_backend_failed'
        | 'store_unavailable'
        | 'console_unavailable'
        | 'shutting_down';
    };
    /** Variant A error */
    ErrorEnvelopeA: {
      /** @constant */
      success: 'false';
      /** @description What went wrong, for a person */
      message: string;
      /** @constant */
      data: '[]';
      /**
       * @description docs/api.md, Error codes
       * @enum {string}
       */
      error_code:
        | 'validation_failed'
        | 'out_of_bounds'
        | 'invalid_template'
        | 'template_unavailable'
        | 'invalid_state'
        | 'service_busy'
        | 'service_id_mismatch'
        | 'idempotency_key_reused'
        | 'disk_shrink_not_supported'
        | 'backup_quota_exceeded'
        | 'backups_disabled'
        | 'quota_exceeded'
        | 'weak_password'
        | 'invalid_ssh_key'
        | 'schedule_limit_reached'
        | 'webhook_limit_reached'
        | 'invalid_envelope_variant'
        | 'invalid_cursor'
        | 'invalid_host_name'
        | 'host_name_taken'
        | 'host_driver_mismatch'
        | 'invalid_host_uri'
        | 'capacity_below_use'
        | 'same_host'
        | 'host_not_active'
        | 'host_unreachable'
        | 'ip_not_of_service'
        | 'invalid_ptr'
        | 'rdns_unavailable'
        | 'invalid_network'
        | 'gateway_outside_network'
        | 'range_outside_network'
        | 'prefix_too_small'
        | 'pool_overlap'
        | 'pool_name_taken'
        | 'unknown_host'
        | 'invalid_token'
        | 'insufficient_scope'
        | 'insufficient_role'
        | 'console_origin_refused'
        | 'https_required'
        | 'service_not_found'
        | 'backup_not_found'
        | 'backup_schedule_not_found'
        | 'product_not_found'
        | 'webhook_not_found'
        | 'reseller_not_found'
        | 'job_not_found'
        | 'host_not_found'
        | 'pool_not_found'
        | 'template_not_found'
        | 'plan_not_found'
        | 'application_not_found'
        | 'not_found'
        | 'method_not_allowed'
        | 'reseller_name_taken'
        | 'job_not_queued'
        | 'job_not_failed'
        | 'job_already_retried'
        | 'host_not_empty'
        | 'pool_in_use'
        | 'no_ipv6_pool'
        | 'product_in_use'
        | 'template_in_use'
        | 'invalidates_services'
        | 'request_timeout'
        | 'payload_too_large'
        | 'unsupported_media_type'
        | 'headers_too_large'
        | 'rate_limited'
        | 'internal_error'
        | 'rdns_backend_failed'
        | 'store_unavailable'
        | 'console_unavailable'
        | 'shutting_down';
    };
    /** AuthorizationServerMetadata */
    AuthorizationServerMetadata: {
      /** @description {base_url}: this server’s public URL and BASE */
      issuer: string;
      token_endpoint: string;
      grant_types_supported: string[];
      token_endpoint_auth_methods_supported: string[];
      scopes_supported: string[];
    };
    /** Plan */
    Plan: {
      /** Format: uuid */
      uuid: string;
      name: string;
      cpu: number;
      ram: number;
      hdd: number;
      price: number;
    };
    /** Bounds */
    Bounds: {
      /** @description The smallest amount an order may have */
      min: string;
      /** @description The largest amount an order may have */
      max: string;
      /**
       * @example GB
       * @example vCore
       * @example IP
       */
      unit: string;
    };
    /** Product */
    Product: {
      /**
       * Format: uuid
       * @description The product, as `product_id` of an order
       */
      id: string;
      name: string;
      /** @description The kind of virtual server the product is */
      template: string;
      /** @description The bounds of each amount an order or upgrade of this product may ask for */
      config: {
        ram: components['schemas']['Bounds'];
        ip: components['schemas']['Bounds'];
        cpu: components['schemas']['Bounds'];
        hdd: components['schemas']['Bounds'];
        backup: components['schemas']['Bounds'];
      };
      os_templates: {
        /**
         * Format: uuid
         * @description As `template_id` of an order
         */
        template_id: string;
        name: string;
      }[];
    };
    /** BackupSchedule */
    BackupSchedule: {
      /** Format: uuid */
      backup_schedule_id: string;
      /**
       * @description `HH:MM`, 24-hour, UTC
       * @example 03:30
       */
      BsTime: string;
      /**
       * @description Comma-separated days
       * @example mon,thu
       */
      BSDays: string;
      /** @constant */
      timezone: 'UTC';
      /** Format: date-time */
      next_run_at: string;
      /** Format: date-time */
      created_at: string;
    };
    /** Backup */
    Backup: {
      /** Format: uuid */
      backup_id: string;
      /** Format: uuid */
      service_id: string;
      /** @enum {string} */
      status: 'creating' | 'available' | 'restoring' | 'deleting' | 'failed';
      /** @description Counted against the service’s `backup` GB */
      size_gb: number;
      /** @enum {string} */
      kind: 'manual' | 'scheduled';
      /** Format: date-time */
      created_at: string;
    };
    /** Ipv6 */
    Ipv6: {
      /** @description The prefix the service has (`2001:db8:4000:1::/64`) */
      prefix: string;
      /** @description The server’s address in it: the prefix’s `::1` */
      address: string;
      /** @description The IPv6 gateway (`fe80::1`, on the link, unless the pool names another) */
      gateway: string;
    };
    /** JobResult */
    JobResult: {
      /**
       * @description now: the running server has the new password already (its QEMU guest agent set it); next_boot: it takes effect when the server next boots (no guest agent answered, or it was stopped)
       * @enum {string}
       */
      password_applies?: 'now' | 'next_boot';
    };
    /** Job */
    Job: {
      /** Format: uuid */
      job_id: string;
      /** Format: uuid */
      service_id: string;
      /** @enum {string} */
      action:
        | 'create'
        | 'start'
        | 'stop'
        | 'restart'
        | 'suspend'
        | 'unsuspend'
        | 'upgrade'
        | 'reset_password'
        | 'terminate'
        | 'backup_create'
        | 'backup_restore'
        | 'backup_delete'
        | 'migrate'
        | 'reinstall'
        | 'rescue'
        | 'unrescue';
      /** @enum {string} */
      status: 'queued' | 'running' | 'succeeded' | 'failed' | 'skipped';
      /** @description Why the job failed or was skipped, for a person */
      error: string | null;
      /** @description How many times it was started (a crashed run is retried) */
      attempts: number;
      /** Format: date-time */
      created_at: string;
      /** Format: date-time */
      started_at: string | null;
      /** Format: date-time */
      finished_at: string | null;
      /** @description What the finished job reports beyond its status; null for most jobs */
      result: components['schemas']['JobResult'] | null;
    };
    /** ServiceError */
    ServiceError: {
      /**
       * @description vm_missing: the server no longer exists on its host (removed outside the API); create_failed: its create job failed for good
       * @enum {string}
       */
      code: 'vm_missing' | 'create_failed';
      /** @description The reason, for a person */
      message: string;
    };
    /** ServiceDetails */
    ServiceDetails: {
      /** Format: uuid */
      service_id: string;
      /** @enum {string} */
      status:
        | 'pending'
        | 'running'
        | 'stopped'
        | 'suspended'
        | 'failed'
        | 'terminated'
        | 'rescue'
        | 'provisioning'
        | 'starting'
        | 'stopping'
        | 'restarting'
        | 'upgrading'
        | 'restoring'
        | 'terminating'
        | 'reinstalling'
        | 'rescuing';
      /** @description The first address; empty until the server is created */
      ip: string;
      /** @description Every address of the server */
      ips: string[];
      /** @description The server’s IPv6 prefix and address; null if its host has no IPv6 pool (or before it is created) */
      ipv6: components['schemas']['Ipv6'] | null;
      username: string;
      password: string;
      domain_name: string;
      /** Format: uuid */
      product_id: string;
      /** Format: uuid */
      template_id: string;
      cpu: number;
      ram: number;
      hdd: number;
      ip_count: number;
      backup: number;
      suspend_reason: string | null;
      disk_revision: number | null;
      /**
       * @description When the last password reset reached the server; null if it never had one. now: the running server has the new password already (its QEMU guest agent set it); next_boot: it takes effect when the server next boots (no guest agent answered, or it was stopped)
       * @enum {string|null}
       */
      password_applies: 'now' | 'next_boot' | null;
      /** @description The SHA-256 fingerprints (as `ssh-keygen -l` prints them) of the OpenSSH public keys installed for root at create-order or the last reinstall; empty if none */
      ssh_key_fingerprints: string[];
      /** @description The operations the service accepts now (docs/design/contract.md#service-statuses) */
      allowed_actions: (
        | 'create'
        | 'start'
        | 'stop'
        | 'restart'
        | 'suspend'
        | 'unsuspend'
        | 'upgrade'
        | 'reset_password'
        | 'terminate'
        | 'backup_create'
        | 'backup_restore'
        | 'backup_delete'
        | 'migrate'
        | 'reinstall'
        | 'rescue'
        | 'unrescue'
        | 'schedule_create'
        | 'schedule_delete'
      )[];
      /** @description The job running now, else the next queued one, else null */
      job: components['schemas']['Job'] | null;
      /** @description Why the service is failed; null unless its status is failed (and null for a failed service whose reason is not known) */
      error: components['schemas']['ServiceError'] | null;
      /** Format: date-time */
      created_at: string;
      /** Format: date-time */
      terminated_at: string | null;
      /**
       * Format: date-time
       * @description In rescue: when the rescue ends by itself (the server boots its own system); null otherwise
       */
      rescue_until: string | null;
      /** @description GB (10^9 bytes, six decimals) the server received this UTC month, as of the last reading of its counters (every VRP_TRAFFIC_SAMPLE_INTERVAL) */
      traffic_in_gb: number;
      /** @description GB (10^9 bytes, six decimals) the server sent this UTC month, as of the last reading */
      traffic_out_gb: number;
      /** @description The product’s monthly traffic quota: GB of in and out together per UTC month; null: none */
      traffic_gb: number | null;
      /**
       * @description What happens past the quota: `throttle:MBIT` (each direction held to MBIT Mbit/s until the month ends) or `suspend` (reason traffic_exceeded); null without a quota
       * @example throttle:10
       * @example suspend
       */
      traffic_over: string | null;
    };
    /** AddressPtr */
    AddressPtr: {
      /** @description One of the service’s addresses (IPv4, or its IPv6 address) */
      ip: string;
      /** @description The host name its PTR record points to: the one set, else the provider’s default, else null (no record) */
      ptr: string | null;
    };
    /** RescueLogin */
    RescueLogin: {
      /** @description The rescue system’s user (`root`) */
      username: string;
      /** @description A new random password for the rescue system only; shown once, in this answer */
      password: string;
    };
    /** ServiceStatus */
    ServiceStatus: {
      /** @enum {string} */
      status:
        | 'pending'
        | 'running'
        | 'stopped'
        | 'suspended'
        | 'failed'
        | 'terminated'
        | 'rescue'
        | 'provisioning'
        | 'starting'
        | 'stopping'
        | 'restarting'
        | 'upgrading'
        | 'restoring'
        | 'terminating'
        | 'reinstalling'
        | 'rescuing';
      /** @description The operations the service accepts now (docs/design/contract.md#service-statuses) */
      allowed_actions: (
        | 'create'
        | 'start'
        | 'stop'
        | 'restart'
        | 'suspend'
        | 'unsuspend'
        | 'upgrade'
        | 'reset_password'
        | 'terminate'
        | 'backup_create'
        | 'backup_restore'
        | 'backup_delete'
        | 'migrate'
        | 'reinstall'
        | 'rescue'
        | 'unrescue'
        | 'schedule_create'
        | 'schedule_delete'
      )[];
      /** @description The job running now, else the next queued one, else null */
      job: components['schemas']['Job'] | null;
      /** @description Why the service is failed; null unless its status is failed (and null for a failed service whose reason is not known) */
      error: components['schemas']['ServiceError'] | null;
    };
    /** OrderedServiceA */
    OrderedServiceA: {
      /**
       * Format: uuid
       * @description The new service
       */
      service_id: string;
      /** @example root */
      username: string;
      /** @description The generated password of the server */
      password: string;
    };
    /** OrderedService */
    OrderedService: {
      /**
       * Format: uuid
       * @description The new service
       */
      service_id: string;
    };
    /** Version */
    Version: {
      /** @example 2.0.0 */
      version: string;
    };
    /** TokenResponse */
    TokenResponse: {
      access_token: string;
      /** @constant */
      token_type: 'Bearer';
      /** @description Seconds the token is valid for */
      expires_in: number;
      /** @description The scopes granted, space-separated */
      scope: string;
    };
  };
  responses: {
    /** @description The request is refused as it is: `validation_failed`, `out_of_bounds`, `invalid_template`, `template_unavailable`, `invalid_state`, `service_busy`, `service_id_mismatch`, `idempotency_key_reused`, `disk_shrink_not_supported`, `backup_quota_exceeded`, `backups_disabled`, `quota_exceeded`, `weak_password`, `invalid_ssh_key`, `schedule_limit_reached`, `webhook_limit_reached`, `invalid_envelope_variant`, `invalid_cursor`, `invalid_host_name`, `host_name_taken`, `host_driver_mismatch`, `invalid_host_uri`, `capacity_below_use`, `same_host`, `host_not_active`, `host_unreachable`, `ip_not_of_service`, `invalid_ptr`, `rdns_unavailable`, `invalid_network`, `gateway_outside_network`, `range_outside_network`, `prefix_too_small`, `pool_overlap`, `pool_name_taken`, `unknown_host` */
    Error400: {
      headers: {
        'X-Request-Id': components['headers']['RequestId'];
        [name: string]: unknown;
      };
      content: {
        'application/json': {
          /** @enum {unknown} */
          error_code?:
            | 'validation_failed'
            | 'out_of_bounds'
            | 'invalid_template'
            | 'template_unavailable'
            | 'invalid_state'
            | 'service_busy'
            | 'service_id_mismatch'
            | 'idempotency_key_reused'
            | 'disk_shrink_not_supported'
            | 'backup_quota_exceeded'
            | 'backups_disabled'
            | 'quota_exceeded'
            | 'weak_password'
            | 'invalid_ssh_key'
            | 'schedule_limit_reached'
            | 'webhook_limit_reached'
            | 'invalid_envelope_variant'
            | 'invalid_cursor'
            | 'invalid_host_name'
            | 'host_name_taken'
            | 'host_driver_mismatch'
            | 'invalid_host_uri'
            | 'capacity_below_use'
            | 'same_host'
            | 'host_not_active'
            | 'host_unreachable'
            | 'ip_not_of_service'
            | 'invalid_ptr'
            | 'rdns_unavailable'
            | 'invalid_network'
            | 'gateway_outside_network'
            | 'range_outside_network'
            | 'prefix_too_small'
            | 'pool_overlap'
            | 'pool_name_taken'
            | 'unknown_host';
        } & components['schemas']['ErrorEnvelope'];
      };
    };
    /** @description No valid bearer token (RFC 6750): no token, a malformed, expired or revoked one: `invalid_token` */
    Error401: {
      headers: {
        'X-Request-Id': components['headers']['RequestId'];
        'WWW-Authenticate': components['headers']['WWW-Authenticate'];
        [name: string]: unknown;
      };
      content: {
        'application/json': {
          /** @enum {unknown} */
          error_code?: 'invalid_token';
        } & components['schemas']['ErrorEnvelope'];
      };
    };
    /** @description The token lacks the scope this operation needs: `insufficient_scope`, `insufficient_role`, `console_origin_refused`, `https_required` */
    Error403: {
      headers: {
        'X-Request-Id': components['headers']['RequestId'];
        'WWW-Authenticate': components['headers']['WWW-Authenticate'];
        [name: string]: unknown;
      };
      content: {
        'application/json': {
          /** @enum {unknown} */
          error_code?:
            | 'insufficient_scope'
            | 'insufficient_role'
            | 'console_origin_refused'
            | 'https_required';
        } & components['schemas']['ErrorEnvelope'];
      };
    };
    /** @description Nothing here has this id for this reseller (another reseller’s objects look the same): `service_not_found`, `backup_not_found`, `backup_schedule_not_found`, `product_not_found`, `webhook_not_found`, `reseller_not_found`, `job_not_found`, `host_not_found`, `pool_not_found`, `template_not_found`, `plan_not_found`, `application_not_found`, `not_found` */
    Error404: {
      headers: {
        'X-Request-Id': components['headers']['RequestId'];
        [name: string]: unknown;
      };
      content: {
        'application/json': {
          /** @enum {unknown} */
          error_code?:
            | 'service_not_found'
            | 'backup_not_found'
            | 'backup_schedule_not_found'
            | 'product_not_found'
            | 'webhook_not_found'
            | 'reseller_not_found'
            | 'job_not_found'
            | 'host_not_found'
            | 'pool_not_found'
            | 'template_not_found'
            | 'plan_not_found'
            | 'application_not_found'
            | 'not_found';
        } & components['schemas']['ErrorEnvelope'];
      };
    };
    /** @description The body is larger than 1 MiB: `payload_too_large` */
    Error413: {
      headers: {
        'X-Request-Id': components['headers']['RequestId'];
        [name: string]: unknown;
      };
      content: {
        'application/json': {
          /** @enum {unknown} */
          error_code?: 'payload_too_large';
        } & components['schemas']['ErrorEnvelope'];
      };
    };
    /** @description The body is not application/json: `unsupported_media_type` */
    Error415: {
      headers: {
        'X-Request-Id': components['headers']['RequestId'];
        [name: string]: unknown;
      };
      content: {
        'application/json': {
          /** @enum {unknown} */
          error_code?: 'unsupported_media_type';
        } & components['schemas']['ErrorEnvelope'];
      };
    };
    /** @description Too many requests from this application; wait as long as Retry-After says: `rate_limited` */
    Error429: {
      headers: {
        'X-Request-Id': components['headers']['RequestId'];
        'Retry-After': components['headers']['Retry-After'];
        [name: string]: unknown;
      };
      content: {
        'application/json': {
          /** @enum {unknown} */
          error_code?: 'rate_limited';
        } & components['schemas']['ErrorEnvelope'];
      };
    };
    /** @description An unexpected failure; the message names the request id to quote: `internal_error` */
    Error500: {
      headers: {
        'X-Request-Id': components['headers']['RequestId'];
        [name: string]: unknown;
      };
      content: {
        'application/json': {
          /** @enum {unknown} */
          error_code?: 'internal_error';
        } & components['schemas']['ErrorEnvelope'];
      };
    };
    /** @description A server the operation writes to (the DNS server) failed or did not answer; nothing was changed: `rdns_backend_failed` */
    Error502: {
      headers: {
        'X-Request-Id': components['headers']['RequestId'];
        [name: string]: unknown;
      };
      content: {
        'application/json': {
          /** @enum {unknown} */
          error_code?: 'rdns_backend_failed';
        } & components['schemas']['ErrorEnvelope'];
      };
    };
    /** @description The store is unreachable, or this process is shutting down; retry after Retry-After: `store_unavailable`, `console_unavailable`, `shutting_down` */
    Error503: {
      headers: {
        'X-Request-Id': components['headers']['RequestId'];
        'Retry-After': components['headers']['Retry-After'];
        [name: string]: unknown;
      };
      content: {
        'application/json': {
          /** @enum {unknown} */
          error_code?: 'store_unavailable' | 'console_unavailable' | 'shutting_down';
        } & components['schemas']['ErrorEnvelope'];
      };
    };
  };
  parameters: {
    /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
    EnvelopeVariant: 'A' | 'B';
    /** @description Echoed in the answer and logged with the request; else the server makes one */
    RequestId: string;
  };
  requestBodies: never;
  headers: {
    /** @description The id of the request in the server’s logs (the one sent, or a new UUID) */
    RequestId: string;
    /** @description RFC 6750 challenge: `Bearer realm=..., error="invalid_token"` or `"insufficient_scope"` */
    'WWW-Authenticate': string;
    /** @description Seconds to wait before retrying */
    'Retry-After': number;
  };
  pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
  authorizationServerMetadata: {
    parameters: {
      query?: never;
      header?: {
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description RFC 8414 metadata */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          /** @description `public, max-age=3600` */
          'Cache-Control'?: string;
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['AuthorizationServerMetadata'];
        };
      };
      400: components['responses']['Error400'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  referenceShortcut: {
    parameters: {
      query?: never;
      header?: {
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description To the reference page */
      302: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          Location?: '/vps_reseller_provider/public/docs';
          [name: string]: unknown;
        };
        content?: never;
      };
      400: components['responses']['Error400'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  healthz: {
    parameters: {
      query?: never;
      header?: {
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Success */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'application/json': {
            /** @constant */
            status: 'ok';
          };
        };
      };
      400: components['responses']['Error400'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  metrics: {
    parameters: {
      query?: never;
      header?: {
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Prometheus text exposition format 0.0.4 */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'text/plain': string;
        };
      };
      400: components['responses']['Error400'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  readyz: {
    parameters: {
      query?: never;
      header?: {
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Success */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'application/json': {
            /** @constant */
            status: 'ready';
            /**
             * @example sqlite
             * @example postgres
             */
            store: string;
          };
        };
      };
      400: components['responses']['Error400'];
      500: components['responses']['Error500'];
      /** @description The store cannot be reached */
      503: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'unavailable';
                /** @constant */
                error_code: 'store_unavailable';
              }
            | components['schemas']['ErrorEnvelope'];
        };
      };
    };
  };
  events: {
    parameters: {
      query?: {
        after?: string;
        limit?: string;
      };
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: (
                  | {
                      /** Format: uuid */
                      event_id: string;
                      /** @constant */
                      type: 'service.status_changed';
                      /** Format: date-time */
                      created_at: string;
                      data: {
                        /** Format: uuid */
                        service_id: string;
                        /** @enum {string} */
                        from:
                          | 'pending'
                          | 'running'
                          | 'stopped'
                          | 'suspended'
                          | 'failed'
                          | 'terminated'
                          | 'rescue'
                          | 'provisioning'
                          | 'starting'
                          | 'stopping'
                          | 'restarting'
                          | 'upgrading'
                          | 'restoring'
                          | 'terminating'
                          | 'reinstalling'
                          | 'rescuing';
                        /** @enum {string} */
                        to:
                          | 'pending'
                          | 'running'
                          | 'stopped'
                          | 'suspended'
                          | 'failed'
                          | 'terminated'
                          | 'rescue'
                          | 'provisioning'
                          | 'starting'
                          | 'stopping'
                          | 'restarting'
                          | 'upgrading'
                          | 'restoring'
                          | 'terminating'
                          | 'reinstalling'
                          | 'rescuing';
                        /** Format: uuid */
                        job_id: string | null;
                        /**
                         * @description Only when job_id is null: why the hypervisor changed the status
                         * @enum {string}
                         */
                        reason?: 'stopped_outside_api' | 'started_outside_api' | 'vm_missing';
                        /** @description Only when job_id is null: the reason, for a person */
                        message?: string;
                        /** @description Only when `to` is `failed`: why, as the service’s status and details show it (vm_missing: removed outside the API; create_failed: its create job failed for good, with the job’s error) */
                        error?: {
                          /** @enum {string} */
                          code: 'vm_missing' | 'create_failed';
                          /** @description The reason, for a person */
                          message: string;
                        };
                      };
                    }
                  | {
                      /** Format: uuid */
                      event_id: string;
                      /** @constant */
                      type: 'job.finished';
                      /** Format: date-time */
                      created_at: string;
                      data: {
                        /** Format: uuid */
                        job_id: string;
                        /** Format: uuid */
                        service_id: string;
                        /** @enum {string} */
                        action:
                          | 'create'
                          | 'start'
                          | 'stop'
                          | 'restart'
                          | 'suspend'
                          | 'unsuspend'
                          | 'upgrade'
                          | 'reset_password'
                          | 'terminate'
                          | 'backup_create'
                          | 'backup_restore'
                          | 'backup_delete'
                          | 'migrate'
                          | 'reinstall'
                          | 'rescue'
                          | 'unrescue';
                        /** @enum {string} */
                        status: 'succeeded' | 'failed' | 'skipped';
                        error: string | null;
                      };
                    }
                  | {
                      /** Format: uuid */
                      event_id: string;
                      /** @constant */
                      type: 'service.traffic_exceeded';
                      /** Format: date-time */
                      created_at: string;
                      data: {
                        /** Format: uuid */
                        service_id: string;
                        /** @description The UTC month, e.g. 2026-03 */
                        month: string;
                        /** @description The product’s monthly quota, GB (10^9 bytes), in and out together */
                        traffic_gb: number;
                        /** @description GB into the server this month when the quota was passed */
                        traffic_in_gb: number;
                        /** @description GB out of the server this month when the quota was passed */
                        traffic_out_gb: number;
                        /** @enum {string} */
                        action: 'throttle' | 'suspend';
                        /** @description Only for throttle: Mbit/s each direction until the month ends */
                        throttle_mbit?: number;
                      };
                    }
                )[];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  plans: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The product */
        product_uuid: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: {
                  default_plans: components['schemas']['Plan'][];
                };
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  products: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: components['schemas']['Product'][];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  productsPost: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path?: never;
      cookie?: never;
    };
    /** @description Optional: no body, an empty one and `{}` are the same. Unknown fields are ignored. */
    requestBody?: {
      content: {
        'application/json': {
          /**
           * Format: uuid
           * @description Variant A sends the service id in the body too; it must equal the one in the path
           */
          service_id?: string;
        };
      };
    };
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: components['schemas']['Product'][];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      413: components['responses']['Error413'];
      415: components['responses']['Error415'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  backupSchedules: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The service */
        service_id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: components['schemas']['BackupSchedule'][];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  createBackupSchedule: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The service */
        service_id: string;
      };
      cookie?: never;
    };
    requestBody: {
      content: {
        'application/json': {
          /**
           * Format: uuid
           * @description Variant A sends the service id in the body too; it must equal the one in the path
           */
          service_id?: string;
          /**
           * @description `HH:MM`, 24-hour, UTC
           * @example 03:30
           */
          BsTime: string;
          /**
           * @description A comma-separated, non-empty, duplicate-free list of `mon,tue,wed,thu,fri,sat,sun`
           * @example mon,thu
           */
          BSDays: string;
        };
      };
    };
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: unknown[];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      413: components['responses']['Error413'];
      415: components['responses']['Error415'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  deleteBackupSchedule: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The service */
        service_id: string;
        /** @description The backup schedule */
        backup_schedule_id: string;
      };
      cookie?: never;
    };
    /** @description Optional: no body, an empty one and `{}` are the same. Unknown fields are ignored. */
    requestBody?: {
      content: {
        'application/json': {
          /**
           * Format: uuid
           * @description Variant A sends the service id in the body too; it must equal the one in the path
           */
          service_id?: string;
        };
      };
    };
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: unknown[];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      413: components['responses']['Error413'];
      415: components['responses']['Error415'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  createBackup: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The service */
        service_id: string;
      };
      cookie?: never;
    };
    /** @description Optional: no body, an empty one and `{}` are the same. Unknown fields are ignored. */
    requestBody?: {
      content: {
        'application/json': {
          /**
           * Format: uuid
           * @description Variant A sends the service id in the body too; it must equal the one in the path
           */
          service_id?: string;
        };
      };
    };
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          /** @description The job queued (absent when nothing was to be done) */
          'X-Job-Id'?: string;
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: unknown[];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      413: components['responses']['Error413'];
      415: components['responses']['Error415'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  deleteBackup: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The service */
        service_id: string;
        /** @description The backup */
        backup_id: string;
      };
      cookie?: never;
    };
    /** @description Optional: no body, an empty one and `{}` are the same. Unknown fields are ignored. */
    requestBody?: {
      content: {
        'application/json': {
          /**
           * Format: uuid
           * @description Variant A sends the service id in the body too; it must equal the one in the path
           */
          service_id?: string;
        };
      };
    };
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          /** @description The job queued (absent when nothing was to be done) */
          'X-Job-Id'?: string;
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: unknown[];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      413: components['responses']['Error413'];
      415: components['responses']['Error415'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  restoreBackup: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The service */
        service_id: string;
        /** @description The backup */
        backup_id: string;
      };
      cookie?: never;
    };
    /** @description Optional: no body, an empty one and `{}` are the same. Unknown fields are ignored. */
    requestBody?: {
      content: {
        'application/json': {
          /**
           * Format: uuid
           * @description Variant A sends the service id in the body too; it must equal the one in the path
           */
          service_id?: string;
        };
      };
    };
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          /** @description The job queued (absent when nothing was to be done) */
          'X-Job-Id'?: string;
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: unknown[];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      413: components['responses']['Error413'];
      415: components['responses']['Error415'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  backups: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The service */
        service_id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: components['schemas']['Backup'][];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  openConsole: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The service */
        service_id: string;
      };
      cookie?: never;
    };
    /** @description Optional: no body, an empty one and `{}` are the same. Unknown fields are ignored. */
    requestBody?: {
      content: {
        'application/json': {
          /**
           * Format: uuid
           * @description Variant A sends the service id in the body too; it must equal the one in the path
           */
          service_id?: string;
        };
      };
    };
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: {
                  /**
                   * Format: uri
                   * @description Open it in a browser within 60 seconds; it opens once. The page shows the serial console (and the graphical one where the server has it).
                   */
                  url: string;
                  /**
                   * Format: date-time
                   * @description The link no longer opens after this time
                   */
                  expires_at: string;
                };
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      413: components['responses']['Error413'];
      415: components['responses']['Error415'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  create: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The service */
        service_id: string;
      };
      cookie?: never;
    };
    /** @description Optional: no body, an empty one and `{}` are the same. Unknown fields are ignored. */
    requestBody?: {
      content: {
        'application/json': {
          /**
           * Format: uuid
           * @description Variant A sends the service id in the body too; it must equal the one in the path
           */
          service_id?: string;
        };
      };
    };
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          /** @description The job queued (absent when nothing was to be done) */
          'X-Job-Id'?: string;
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: unknown[];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      413: components['responses']['Error413'];
      415: components['responses']['Error415'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  details: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The service */
        service_id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: components['schemas']['ServiceDetails'];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  detailsPost: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The service */
        service_id: string;
      };
      cookie?: never;
    };
    /** @description Optional: no body, an empty one and `{}` are the same. Unknown fields are ignored. */
    requestBody?: {
      content: {
        'application/json': {
          /**
           * Format: uuid
           * @description Variant A sends the service id in the body too; it must equal the one in the path
           */
          service_id?: string;
        };
      };
    };
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: components['schemas']['ServiceDetails'];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      413: components['responses']['Error413'];
      415: components['responses']['Error415'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  jobs: {
    parameters: {
      query?: {
        /** @description How many jobs, 1 to 1000 (default 100) */
        limit?: string;
      };
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The service */
        service_id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: components['schemas']['Job'][];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  rdns: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The service */
        service_id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: components['schemas']['AddressPtr'][];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  setRdns: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The service */
        service_id: string;
      };
      cookie?: never;
    };
    requestBody: {
      content: {
        'application/json': {
          /**
           * Format: uuid
           * @description Variant A sends the service id in the body too; it must equal the one in the path
           */
          service_id?: string;
          /** @description One of the service’s addresses (400 `ip_not_of_service` otherwise) */
          ip: string;
          /** @description A host name (RFC 1123, as an order’s `domain_name`; 400 `invalid_ptr` otherwise); null: back to the provider’s default (which may be no record) */
          ptr: string | null;
        };
      };
    };
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: components['schemas']['AddressPtr'][];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      413: components['responses']['Error413'];
      415: components['responses']['Error415'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      502: components['responses']['Error502'];
      503: components['responses']['Error503'];
    };
  };
  reinstall: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The service */
        service_id: string;
      };
      cookie?: never;
    };
    requestBody: {
      content: {
        'application/json': {
          /**
           * Format: uuid
           * @description Variant A sends the service id in the body too; it must equal the one in the path
           */
          service_id?: string;
          /**
           * Format: uuid
           * @description One of the service’s product’s `os_templates` (400 `invalid_template`; 400 `template_unavailable` if the provider has no image for it)
           */
          template_id: string;
          /** @description The new root password: 8 to 128 characters with at least three of lower case, upper case, digits and symbols (400 `weak_password` otherwise). Absent: a generated one; details show it. */
          password?: string;
          /**
           * @description Replace root’s keys; absent: the service keeps the keys it has; `[]`: removes them. Each entry one OpenSSH public key, `type base64 [comment]` (a .pub file's line): ssh-ed25519, ssh-rsa of at least 2048 bits, ecdsa-sha2-nistp256/384/521; at most 10, no key twice (400 `invalid_ssh_key` naming the entry otherwise). Details show their fingerprints.
           * @example [
           *       "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@laptop"
           *     ]
           */
          ssh_keys?: string[];
        };
      };
    };
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          /** @description The job queued (absent when nothing was to be done) */
          'X-Job-Id'?: string;
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: unknown[];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      413: components['responses']['Error413'];
      415: components['responses']['Error415'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  rescue: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The service */
        service_id: string;
      };
      cookie?: never;
    };
    /** @description Optional: no body, an empty one and `{}` are the same. Unknown fields are ignored. */
    requestBody?: {
      content: {
        'application/json': {
          /**
           * Format: uuid
           * @description Variant A sends the service id in the body too; it must equal the one in the path
           */
          service_id?: string;
        };
      };
    };
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          /** @description The job queued (absent when nothing was to be done) */
          'X-Job-Id'?: string;
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: components['schemas']['RescueLogin'];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      413: components['responses']['Error413'];
      415: components['responses']['Error415'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  resetPassword: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The service */
        service_id: string;
      };
      cookie?: never;
    };
    requestBody: {
      content: {
        'application/json': {
          /**
           * Format: uuid
           * @description Variant A sends the service id in the body too; it must equal the one in the path
           */
          service_id?: string;
          /** @description 8 to 128 characters with at least three of lower case, upper case, digits and symbols (400 `weak_password` otherwise) */
          password: string;
        };
      };
    };
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          /** @description The job queued (absent when nothing was to be done) */
          'X-Job-Id'?: string;
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: unknown[];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      413: components['responses']['Error413'];
      415: components['responses']['Error415'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  restart: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The service */
        service_id: string;
      };
      cookie?: never;
    };
    /** @description Optional: no body, an empty one and `{}` are the same. Unknown fields are ignored. */
    requestBody?: {
      content: {
        'application/json': {
          /**
           * Format: uuid
           * @description Variant A sends the service id in the body too; it must equal the one in the path
           */
          service_id?: string;
        };
      };
    };
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          /** @description The job queued (absent when nothing was to be done) */
          'X-Job-Id'?: string;
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: unknown[];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      413: components['responses']['Error413'];
      415: components['responses']['Error415'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  start: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The service */
        service_id: string;
      };
      cookie?: never;
    };
    /** @description Optional: no body, an empty one and `{}` are the same. Unknown fields are ignored. */
    requestBody?: {
      content: {
        'application/json': {
          /**
           * Format: uuid
           * @description Variant A sends the service id in the body too; it must equal the one in the path
           */
          service_id?: string;
        };
      };
    };
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          /** @description The job queued (absent when nothing was to be done) */
          'X-Job-Id'?: string;
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: unknown[];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      413: components['responses']['Error413'];
      415: components['responses']['Error415'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  status: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The service */
        service_id: string;
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: components['schemas']['ServiceStatus'];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  statusPost: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The service */
        service_id: string;
      };
      cookie?: never;
    };
    /** @description Optional: no body, an empty one and `{}` are the same. Unknown fields are ignored. */
    requestBody?: {
      content: {
        'application/json': {
          /**
           * Format: uuid
           * @description Variant A sends the service id in the body too; it must equal the one in the path
           */
          service_id?: string;
        };
      };
    };
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: components['schemas']['ServiceStatus'];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      413: components['responses']['Error413'];
      415: components['responses']['Error415'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  stop: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The service */
        service_id: string;
      };
      cookie?: never;
    };
    /** @description Optional: no body, an empty one and `{}` are the same. Unknown fields are ignored. */
    requestBody?: {
      content: {
        'application/json': {
          /**
           * Format: uuid
           * @description Variant A sends the service id in the body too; it must equal the one in the path
           */
          service_id?: string;
        };
      };
    };
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          /** @description The job queued (absent when nothing was to be done) */
          'X-Job-Id'?: string;
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: unknown[];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      413: components['responses']['Error413'];
      415: components['responses']['Error415'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  suspend: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The service */
        service_id: string;
      };
      cookie?: never;
    };
    /** @description Optional: no body, an empty one and `{}` are the same. Unknown fields are ignored. */
    requestBody?: {
      content: {
        'application/json': {
          /**
           * Format: uuid
           * @description Variant A sends the service id in the body too; it must equal the one in the path
           */
          service_id?: string;
          /** @description Why (billing); shown in details as `suspend_reason` */
          suspend_reason?: string;
        };
      };
    };
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          /** @description The job queued (absent when nothing was to be done) */
          'X-Job-Id'?: string;
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: unknown[];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      413: components['responses']['Error413'];
      415: components['responses']['Error415'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  terminate: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The service */
        service_id: string;
      };
      cookie?: never;
    };
    /** @description Optional: no body, an empty one and `{}` are the same. Unknown fields are ignored. */
    requestBody?: {
      content: {
        'application/json': {
          /**
           * Format: uuid
           * @description Variant A sends the service id in the body too; it must equal the one in the path
           */
          service_id?: string;
        };
      };
    };
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          /** @description The job queued (absent when nothing was to be done) */
          'X-Job-Id'?: string;
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: unknown[];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      413: components['responses']['Error413'];
      415: components['responses']['Error415'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  unrescue: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The service */
        service_id: string;
      };
      cookie?: never;
    };
    /** @description Optional: no body, an empty one and `{}` are the same. Unknown fields are ignored. */
    requestBody?: {
      content: {
        'application/json': {
          /**
           * Format: uuid
           * @description Variant A sends the service id in the body too; it must equal the one in the path
           */
          service_id?: string;
        };
      };
    };
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          /** @description The job queued (absent when nothing was to be done) */
          'X-Job-Id'?: string;
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: unknown[];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      413: components['responses']['Error413'];
      415: components['responses']['Error415'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  unsuspend: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The service */
        service_id: string;
      };
      cookie?: never;
    };
    /** @description Optional: no body, an empty one and `{}` are the same. Unknown fields are ignored. */
    requestBody?: {
      content: {
        'application/json': {
          /**
           * Format: uuid
           * @description Variant A sends the service id in the body too; it must equal the one in the path
           */
          service_id?: string;
        };
      };
    };
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          /** @description The job queued (absent when nothing was to be done) */
          'X-Job-Id'?: string;
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: unknown[];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      413: components['responses']['Error413'];
      415: components['responses']['Error415'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  upgrade: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The service */
        service_id: string;
      };
      cookie?: never;
    };
    requestBody: {
      content: {
        'application/json': {
          /**
           * Format: uuid
           * @description Variant A sends the service id in the body too; it must equal the one in the path
           */
          service_id?: string;
          /** @description vCores, within the product’s bounds */
          CPU: number;
          /** @description GB, within the product’s bounds */
          RAM: number;
          /** @description GB, within the product’s bounds; never below the current size */
          HDD: number;
          /** @description Addresses; the first one stays */
          IP: number;
          /** @description GB of backup space; never below what the backups use now */
          BACKUP: number;
        };
      };
    };
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          /** @description The job queued (absent when nothing was to be done) */
          'X-Job-Id'?: string;
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: unknown[];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      413: components['responses']['Error413'];
      415: components['responses']['Error415'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  createOrder: {
    parameters: {
      query?: never;
      header?: {
        /** @description Makes the order safe to retry: the same key with the same body within 24 h answers what the first request answered (with `Idempotent-Replayed: true`) and creates nothing; with another body, 400 `idempotency_key_reused`. 1 to 255 visible ASCII characters, per reseller. */
        'idempotency-key'?: string;
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path?: never;
      cookie?: never;
    };
    requestBody: {
      content: {
        'application/json': {
          /**
           * Format: uuid
           * @description The product (404 `product_not_found` if none has this id)
           */
          product_id: string;
          /**
           * @description An RFC 1123 host name; stored in lower case
           * @example server1.example.com
           */
          domain_name: string;
          /**
           * Format: uuid
           * @description One of the product’s `os_templates` (400 `invalid_template` otherwise)
           */
          template_id: string;
          cpu: number;
          ram: number;
          hdd: number;
          ip: number;
          backup: number;
          /**
           * @description Installed for root when the server is created; none when absent. Each entry one OpenSSH public key, `type base64 [comment]` (a .pub file's line): ssh-ed25519, ssh-rsa of at least 2048 bits, ecdsa-sha2-nistp256/384/521; at most 10, no key twice (400 `invalid_ssh_key` naming the entry otherwise). Details show their fingerprints.
           * @example [
           *       "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@laptop"
           *     ]
           */
          ssh_keys?: string[];
        };
      };
    };
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          /** @description `true` when this is the answer of an earlier request with the same Idempotency-Key */
          'Idempotent-Replayed'?: 'true';
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: components['schemas']['OrderedService'][];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      413: components['responses']['Error413'];
      415: components['responses']['Error415'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  testConnection: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path?: never;
      cookie?: never;
    };
    /** @description Optional: no body, an empty one and `{}` are the same. Unknown fields are ignored. */
    requestBody?: {
      content: {
        'application/json': {
          /**
           * Format: uuid
           * @description Variant A sends the service id in the body too; it must equal the one in the path
           */
          service_id?: string;
        };
      };
    };
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: unknown[];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      413: components['responses']['Error413'];
      415: components['responses']['Error415'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  usage: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: {
                  quota: {
                    services: number | null;
                    cpu: number | null;
                    ram: number | null;
                    hdd: number | null;
                    ip: number | null;
                    backup: number | null;
                  };
                  use: {
                    services: number;
                    cpu: number;
                    ram: number;
                    hdd: number;
                    ip: number;
                    backup: number;
                  };
                };
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  version: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: components['schemas']['Version'];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  webhooks: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: {
                  /** Format: uuid */
                  webhook_id: string;
                  url: string;
                  /** @description The types it receives; null when registered without `events`: every type, also types added later */
                  events: ('service.status_changed' | 'job.finished' | 'service.traffic_exceeded')[] | null;
                  /** Format: date-time */
                  created_at: string;
                }[];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  createWebhook: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path?: never;
      cookie?: never;
    };
    requestBody: {
      content: {
        'application/json': {
          url: string;
          events?: ('service.status_changed' | 'job.finished' | 'service.traffic_exceeded')[];
        };
      };
    };
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: {
                  /** Format: uuid */
                  webhook_id: string;
                  url: string;
                  /** @description The types it receives; null when registered without `events`: every type, also types added later */
                  events: ('service.status_changed' | 'job.finished' | 'service.traffic_exceeded')[] | null;
                  /** Format: date-time */
                  created_at: string;
                  /** @description `whsec_` + base64 of 32 random bytes; shown once */
                  secret: string;
                };
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      413: components['responses']['Error413'];
      415: components['responses']['Error415'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  deleteWebhook: {
    parameters: {
      query?: never;
      header?: {
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        /** @description The webhook */
        webhook_id: string;
      };
      cookie?: never;
    };
    /** @description Optional: no body, an empty one and `{}` are the same. Unknown fields are ignored. */
    requestBody?: {
      content: {
        'application/json': {
          /**
           * Format: uuid
           * @description Variant A sends the service id in the body too; it must equal the one in the path
           */
          service_id?: string;
        };
      };
    };
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: unknown[];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      413: components['responses']['Error413'];
      415: components['responses']['Error415'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  reference: {
    parameters: {
      query?: never;
      header?: {
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description The page; its scripts and styles are under /docs/ */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'text/html': string;
        };
      };
      400: components['responses']['Error400'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  referenceFile: {
    parameters: {
      query?: never;
      header?: {
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path: {
        file:
          | 'swagger-ui.css'
          | 'swagger-ui-bundle.js'
          | 'favicon-32x32.png'
          | 'favicon-16x16.png'
          | 'settings.js';
      };
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description The file */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'text/css': string;
          'text/javascript': string;
          'image/png': string;
        };
      };
      400: components['responses']['Error400'];
      404: components['responses']['Error404'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  token: {
    parameters: {
      query?: never;
      header?: {
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path?: never;
      cookie?: never;
    };
    requestBody: {
      content: {
        'application/x-www-form-urlencoded': {
          /** @constant */
          grant_type: 'client_credentials';
          /** @description With `client_secret_post`; with HTTP Basic, leave it out or send the same */
          client_id?: string;
          /** @description With `client_secret_post`; never with HTTP Basic */
          client_secret?: string;
          /**
           * @description A space-separated subset of the application’s scopes; all of them without it
           * @example access products service
           */
          scope?: string;
        };
        'application/json': {
          /** @constant */
          grant_type: 'client_credentials';
          /** @description With `client_secret_post`; with HTTP Basic, leave it out or send the same */
          client_id?: string;
          /** @description With `client_secret_post`; never with HTTP Basic */
          client_secret?: string;
          /**
           * @description A space-separated subset of the application’s scopes; all of them without it
           * @example access products service
           */
          scope?: string;
        };
      };
    };
    responses: {
      /** @description A bearer token (RFC 6749 section 5.1) */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          /** @description `no-store` */
          'Cache-Control'?: string;
          /** @description `no-cache` */
          Pragma?: string;
          [name: string]: unknown;
        };
        content: {
          'application/json': components['schemas']['TokenResponse'];
        };
      };
      /** @description A malformed request, another grant type, a scope the application does not have, or (`invalid_request`) plain http from outside loopback, which the server refuses unless VRP_ALLOW_HTTP=1 */
      400: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          /** @description `no-store` */
          'Cache-Control'?: string;
          /** @description `no-cache` */
          Pragma?: string;
          [name: string]: unknown;
        };
        content: {
          'application/json': {
            /** @enum {string} */
            error: 'invalid_request' | 'unsupported_grant_type' | 'invalid_scope';
            error_description: string;
          };
        };
      };
      /** @description The application did not authenticate, or is disabled */
      401: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          /** @description `no-store` */
          'Cache-Control'?: string;
          /** @description `no-cache` */
          Pragma?: string;
          /** @description A Basic challenge, when the request tried HTTP Basic */
          'WWW-Authenticate'?: string;
          [name: string]: unknown;
        };
        content: {
          'application/json': {
            /** @enum {string} */
            error: 'invalid_client';
            error_description: string;
          };
        };
      };
      /** @description The body is larger than 1 MiB */
      413: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          /** @description `no-store` */
          'Cache-Control'?: string;
          /** @description `no-cache` */
          Pragma?: string;
          [name: string]: unknown;
        };
        content: {
          'application/json': {
            /** @enum {string} */
            error: 'invalid_request';
            error_description: string;
          };
        };
      };
      /** @description The body is neither a form nor JSON */
      415: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          /** @description `no-store` */
          'Cache-Control'?: string;
          /** @description `no-cache` */
          Pragma?: string;
          [name: string]: unknown;
        };
        content: {
          'application/json': {
            /** @enum {string} */
            error: 'invalid_request';
            error_description: string;
          };
        };
      };
      /** @description Too many failed authentications from this address, or too many waiting at once from it */
      429: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          /** @description `no-store` */
          'Cache-Control'?: string;
          /** @description `no-cache` */
          Pragma?: string;
          /** @description Seconds until the address may try again */
          'Retry-After'?: number;
          [name: string]: unknown;
        };
        content: {
          'application/json': {
            /** @enum {string} */
            error: 'temporarily_unavailable';
            error_description: string;
          };
        };
      };
      /** @description An unexpected failure */
      500: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          /** @description `no-store` */
          'Cache-Control'?: string;
          /** @description `no-cache` */
          Pragma?: string;
          [name: string]: unknown;
        };
        content: {
          'application/json': {
            /** @enum {string} */
            error: 'server_error';
            error_description: string;
          };
        };
      };
      /** @description The store is unreachable, or this process is shutting down (`server_error`), or too many authentications are waiting for their secret check (`temporarily_unavailable`, with Retry-After) */
      503: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          /** @description `no-store` */
          'Cache-Control'?: string;
          /** @description `no-cache` */
          Pragma?: string;
          /** @description Seconds to wait, with `temporarily_unavailable` */
          'Retry-After'?: number;
          [name: string]: unknown;
        };
        content: {
          'application/json': {
            /** @enum {string} */
            error: 'server_error' | 'temporarily_unavailable';
            error_description: string;
          };
        };
      };
    };
  };
  openapiDocument: {
    parameters: {
      query?: never;
      header?: {
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description OpenAPI 3.1 */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          [name: string]: unknown;
        };
        content: {
          'application/json': {
            openapi: string;
          };
        };
      };
      400: components['responses']['Error400'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
  createOrderAlias: {
    parameters: {
      query?: never;
      header?: {
        /** @description Makes the order safe to retry: the same key with the same body within 24 h answers what the first request answered (with `Idempotent-Replayed: true`) and creates nothing; with another body, 400 `idempotency_key_reused`. 1 to 255 visible ASCII characters, per reseller. */
        'idempotency-key'?: string;
        /** @description The envelope of the answer: A or B; without it, the default of the application (set when it is registered). Anything else is 400 `invalid_envelope_variant`. */
        'X-Envelope-Variant'?: components['parameters']['EnvelopeVariant'];
        /** @description Echoed in the answer and logged with the request; else the server makes one */
        'X-Request-Id'?: components['parameters']['RequestId'];
      };
      path?: never;
      cookie?: never;
    };
    requestBody: {
      content: {
        'application/json': {
          /**
           * Format: uuid
           * @description The product (404 `product_not_found` if none has this id)
           */
          product_id: string;
          /**
           * @description An RFC 1123 host name; stored in lower case
           * @example server1.example.com
           */
          domain_name: string;
          /**
           * Format: uuid
           * @description One of the product’s `os_templates` (400 `invalid_template` otherwise)
           */
          template_id: string;
          cpu: number;
          ram: number;
          hdd: number;
          ip: number;
          backup: number;
          /**
           * @description Installed for root when the server is created; none when absent. Each entry one OpenSSH public key, `type base64 [comment]` (a .pub file's line): ssh-ed25519, ssh-rsa of at least 2048 bits, ecdsa-sha2-nistp256/384/521; at most 10, no key twice (400 `invalid_ssh_key` naming the entry otherwise). Details show their fingerprints.
           * @example [
           *       "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@laptop"
           *     ]
           */
          ssh_keys?: string[];
        };
      };
    };
    responses: {
      /** @description Success, in the envelope of the request: X-Envelope-Variant, else the default of the application */
      200: {
        headers: {
          'X-Request-Id': components['headers']['RequestId'];
          /** @description `true` when this is the answer of an earlier request with the same Idempotency-Key */
          'Idempotent-Replayed'?: 'true';
          [name: string]: unknown;
        };
        content: {
          'application/json':
            | {
                /** @constant */
                status: 'Success';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                data: components['schemas']['OrderedService'][];
              }
            | {
                /** @constant */
                success: 'true';
                /** @description Empty, or says why nothing was done (the target status was reached already) */
                message: string;
                /** @description The JSON text of the payload: what variant B sends as `data` */
                data: string;
              };
        };
      };
      400: components['responses']['Error400'];
      401: components['responses']['Error401'];
      403: components['responses']['Error403'];
      404: components['responses']['Error404'];
      413: components['responses']['Error413'];
      415: components['responses']['Error415'];
      429: components['responses']['Error429'];
      500: components['responses']['Error500'];
      503: components['responses']['Error503'];
    };
  };
}

import { type Static, Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { BILLING_ID_MAX, checkBillingId } from '../../domain/billing-id.ts';
import { ApiError } from '../../domain/errors.ts';
import { MAX_QUOTA, QUOTA_RESOURCES, type Quota, UNLIMITED } from '../../domain/quotas.ts';
import { RESELLER_NAME_PATTERN } from '../../domain/resellers.ts';
import { isUniqueViolation } from '../../store/errors.ts';
import { listClients } from '../../store/repos/clients.ts';
import { findQuota, quotaUse, setQuota } from '../../store/repos/quotas.ts';
import {
  createResellerRecorded,
  findReseller,
  listResellersPage,
  type Reseller,
  setResellerBillingIdRecorded,
  setResellerEnabledRecorded,
} from '../../store/repos/resellers.ts';
import type { App } from '../app-type.ts';
import { OPS } from '../base-path.ts';
import { notFound, pathId } from '../path-id.ts';
import { auditContext } from '../plugins/audit.ts';
import { InputId, Nullable } from '../schemas/common.ts';
import { ResellerDetailsPayload, ResellerPayload } from '../schemas/operator.ts';
import { UsagePayload } from '../schemas/usage.ts';
import { operatorRoute } from './operator-route.ts';
import { decodeCursor, encodeCursor, limitOf, Page, PageQuery, pageOf } from './paging.ts';

const ResellerParams = Type.Object({ reseller_id: InputId('The reseller') });
const CreateBody = Type.Object({
  name: Type.String({
    pattern: RESELLER_NAME_PATTERN,
    description:
      '1 to 100 letters, digits, spaces, dots, underscores or hyphens, starting with a letter or digit; unique',
  }),
});
const ChangeBody = Type.Object({
  external_billing_id: Type.Optional(
    Nullable(Type.String({ maxLength: BILLING_ID_MAX }), {
      description: `The key the provider’s billing system knows the reseller by: 1 to ${BILLING_ID_MAX} characters of printable text (no control or format characters, no space first or last); null clears it`,
    }),
  ),
});
const Cap = Type.Union([Type.Integer({ minimum: 0, maximum: MAX_QUOTA }), Type.Null()], {
  description: 'The cap; null or absent: unlimited',
});
const QuotaBody = Type.Object(
  Object.fromEntries(QUOTA_RESOURCES.map((r) => [r, Type.Optional(Cap)])) as {
    [R in (typeof QUOTA_RESOURCES)[number]]: Type.TOptional<typeof Cap>;
  },
);

function resellerView(r: Reseller): Static<typeof ResellerPayload> {
  return {
    reseller_id: r.id,
    name: r.name,
    enabled: r.enabled,
    created_at: new Date(r.createdAt).toISOString(),
    external_billing_id: r.externalBillingId,
  };
}

function found<T>(r: T | undefined): T {
  if (r === undefined) throw notFound('reseller_not_found');
  return r;
}

const tags = ['Resellers'];

/**
 * `OPS/resellers...`: list, create, details, disable and enable, quota
 * (docs/design/contract.md#operator-api, docs/design/contract.md#quotas-and-usage).
 */
export function registerResellerRoutes(app: App, ctx: AppContext): void {
  const { db } = ctx.store;

  app.get(
    `${OPS}/resellers`,
    operatorRoute({
      operationId: 'listResellers',
      tags,
      summary: 'List resellers',
      description: 'Every reseller, in name order, a page at a time.',
      querystring: Type.Object(PageQuery),
      response: { 200: Page(ResellerPayload) },
    }),
    async (request) => {
      const limit = limitOf(request.query);
      const after =
        request.query.cursor &&
        decodeCursor(ctx.keys.cursorKey, 'resellers', request.query.cursor, ['string'] as const)[0];
      const rows = await listResellersPage(db, { afterName: after, limit: limit + 1 });
      return pageOf(rows, limit, resellerView, (r) =>
        encodeCursor(ctx.keys.cursorKey, 'resellers', [r.name]),
      );
    },
  );

  app.post(
    `${OPS}/resellers`,
    operatorRoute(
      {
        operationId: 'createReseller',
        tags,
        summary: 'Create a reseller',
        description:
          'A new reseller (a tenant), enabled, with no quota. Register its applications with `POST OPS/resellers/{id}/applications` (or `vrp client create --reseller NAME`). A name in use already is 409 `reseller_name_taken`.',
        body: CreateBody,
        errorStatuses: [409],
        response: { 200: ResellerPayload },
      },
      'reseller.create',
    ),
    async (request) => {
      const created = await createResellerRecorded(
        db,
        request.body.name,
        ctx.clock.now(),
        auditContext(request),
      ).catch((err: unknown) => {
        if (isUniqueViolation(err)) {
          throw new ApiError('reseller_name_taken', `A reseller named "${request.body.name}" exists already`);
        }
        throw err;
      });
      return resellerView(created);
    },
  );

  app.get(
    `${OPS}/resellers/:reseller_id`,
    operatorRoute({
      operationId: 'getReseller',
      tags,
      summary: 'A reseller with its applications, quota and use',
      description:
        'The reseller, its applications (without secrets), its quota (null: unlimited) and its current use.',
      params: ResellerParams,
      response: { 200: ResellerDetailsPayload },
    }),
    async (request) => {
      const reseller = found(
        await findReseller(db, pathId(request.params.reseller_id, 'reseller_not_found')),
      );
      const [clients, quota, use] = await Promise.all([
        listClients(db, reseller.id),
        findQuota(db, reseller.id),
        quotaUse(db, reseller.id),
      ]);
      return {
        ...resellerView(reseller),
        applications: clients.map((c) => ({
          client_id: c.id,
          name: c.name,
          scopes: [...c.scopes],
          variant: c.variant,
          enabled: c.enabled,
          created_at: new Date(c.createdAt).toISOString(),
        })),
        quota: quota ?? UNLIMITED,
        use,
      };
    },
  );

  app.patch(
    `${OPS}/resellers/:reseller_id`,
    operatorRoute(
      {
        operationId: 'updateReseller',
        tags,
        summary: 'Change a reseller',
        description: `Its external billing id (\`external_billing_id\`, null clears it; left out: unchanged): 1 to ${BILLING_ID_MAX} characters of printable text, else 400 \`validation_failed\`. Billing data: the roles \`admin\` and \`billing\` may change it. Recorded in the audit log as \`reseller.update\`.`,
        params: ResellerParams,
        body: ChangeBody,
        response: { 200: ResellerPayload },
      },
      'reseller.update',
      'bill',
    ),
    async (request) => {
      const id = pathId(request.params.reseller_id, 'reseller_not_found');
      const given = request.body?.external_billing_id;
      if (given === undefined) return resellerView(found(await findReseller(db, id)));
      const reseller = found(
        await setResellerBillingIdRecorded(
          db,
          id,
          checkBillingId(given),
          ctx.clock.now(),
          auditContext(request),
        ),
      );
      return resellerView(reseller);
    },
  );

  for (const verb of ['disable', 'enable'] as const) {
    app.post(
      `${OPS}/resellers/:reseller_id/${verb}`,
      operatorRoute(
        {
          operationId: `${verb}Reseller`,
          tags,
          summary: verb === 'disable' ? 'Disable a reseller' : 'Enable a reseller',
          description:
            verb === 'disable'
              ? 'Its applications get no new tokens and their tokens are revoked: refused (within a few seconds on every server process), and still after an enable. Its services stay as they are. Disabling a disabled reseller changes nothing.'
              : 'Its applications can get new tokens again; tokens issued before it was disabled stay refused.',
          params: ResellerParams,
          response: { 200: ResellerPayload },
        },
        `reseller.${verb}`,
      ),
      async (request) => {
        const id = pathId(request.params.reseller_id, 'reseller_not_found');
        const reseller = found(
          await setResellerEnabledRecorded(db, id, verb === 'enable', ctx.clock.now(), auditContext(request)),
        );
        // This process forgets what it knew of the reseller's applications at once; others within the cache's age.
        for (const c of await listClients(db, id)) ctx.clientStates.invalidate(c.id);
        return resellerView(reseller);
      },
    );
  }

  app.put(
    `${OPS}/resellers/:reseller_id/quota`,
    operatorRoute(
      {
        operationId: 'setResellerQuota',
        tags,
        summary: 'Set a reseller’s quota',
        description:
          'The quota as a whole: each cap (services, cpu in vCores, ram, hdd and backup in GB, ip in addresses) a whole number, or null or absent for unlimited; `{}` lifts the quota. Services above a lowered cap stay; new orders and upgrades beyond it answer 400 `quota_exceeded`. Answers the quota and the use.',
        params: ResellerParams,
        body: QuotaBody,
        response: { 200: UsagePayload },
      },
      'reseller.quota',
    ),
    async (request) => {
      const reseller = found(
        await findReseller(db, pathId(request.params.reseller_id, 'reseller_not_found')),
      );
      const b = request.body;
      const quota: Quota = {
        services: b.services ?? null,
        cpu: b.cpu ?? null,
        ram: b.ram ?? null,
        hdd: b.hdd ?? null,
        ip: b.ip ?? null,
        backup: b.backup ?? null,
      };
      await setQuota(db, reseller.id, quota, ctx.clock.now(), auditContext(request));
      const use = await quotaUse(db, reseller.id);
      return { quota: (await findQuota(db, reseller.id)) ?? UNLIMITED, use };
    },
  );
}

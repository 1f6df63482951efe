import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { ApiError } from '../../domain/errors.ts';
import type { JobParams } from '../../domain/job-params.ts';
import { checkTemplate } from '../../domain/orders.ts';
import { checkPasswordStrength, generatePassword } from '../../domain/passwords.ts';
import { checkSshKeys } from '../../domain/ssh-keys.ts';
import { randomPoolBytes } from '../../random-pool.ts';
import type { App } from '../app-type.ts';
import { BodyServiceId, EmptyList, InputId, ServiceParams, SshKeys } from '../schemas/common.ts';
import { JOB_HEADERS } from '../schemas/services.ts';
import { acceptOperation, JOB_ANSWER, RESELLER_DOOR, type ServiceDoor } from './service-actions.ts';

const ReinstallBody = Type.Object({
  service_id: BodyServiceId,
  template_id: InputId(
    'One of the service’s product’s `os_templates` (400 `invalid_template`; 400 `template_unavailable` if the provider has no image for it)',
  ),
  // Any string: its length is checked with the rest of the strength rules (400 `weak_password`).
  password: Type.Optional(
    Type.String({
      description:
        'The new root password: 8 to 128 characters with at least three of lower case, upper case, digits and symbols (400 `weak_password` otherwise). Absent: a generated one; details show it.',
    }),
  ),
  ssh_keys: Type.Optional(
    SshKeys('Replace root’s keys; absent: the service keeps the keys it has; `[]`: removes them'),
  ),
});

export function registerReinstallRoutes(app: App, ctx: AppContext): void {
  registerReinstallActions(app, ctx, RESELLER_DOOR);
}

/** Reinstall of the server from one of its product's templates, through `door`. */
export function registerReinstallActions(app: App, ctx: AppContext, door: ServiceDoor): void {
  app.post(
    door.url('reinstall'),
    door.route(
      {
        operationId: door.operationId('reinstall'),
        tags: [door.tag('Service actions')],
        summary: 'Reinstall the server',
        description:
          'Rebuilds the server’s disk from `template_id` (one of its product’s templates; everything on the disk is lost) with a new root password and, optionally, new SSH keys. The addresses, amounts, backups and schedules stay; the server ends in the power state it had (`running` or `stopped`; other statuses 400 `invalid_state`). The next backup is a full one.' +
          JOB_ANSWER,
        successHeaders: JOB_HEADERS,
        params: ServiceParams,
        body: ReinstallBody,
        response: { 200: EmptyList },
      },
      'service.reinstall',
    ),
    async (request, reply) => {
      const { template_id: templateId, password, ssh_keys: keys } = request.body;
      const sshKeys = keys === undefined ? undefined : checkSshKeys(keys);
      if (password !== undefined) checkPasswordStrength(password);
      const catalog = await ctx.catalog.get();
      // Filled in by `check`, which runs in the transaction that accepts the job: the template is
      // the service's product's, and a request without keys carries the keys the service has.
      const params: { -readonly [K in keyof JobParams['reinstall']]: JobParams['reinstall'][K] } = {
        template_id: templateId.toLowerCase(),
        password_enc: ctx.secretBox.seal(password ?? generatePassword(randomPoolBytes)),
        ssh_keys: sshKeys ?? [],
      };
      return acceptOperation(
        ctx,
        request,
        reply,
        {
          action: 'reinstall',
          params,
          check: async (service) => {
            const product = catalog.byId.get(service.productId);
            if (!product)
              throw new ApiError('product_not_found', 'The product of this service is no longer offered');
            params.template_id = checkTemplate(product, templateId, catalog.unavailableTemplates);
            params.ssh_keys = sshKeys ?? [...service.sshKeys];
          },
        },
        door,
      );
    },
  );
}

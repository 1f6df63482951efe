import { type Task, vmChange } from '../task.ts';

/**
 * The disk is rebuilt from the template with the new login and keys; the addresses stay and the
 * server ends in the power state it had (the driver's part). The service records the template,
 * the new password (sealed, shown by details as after any change) and the keys.
 */
export const reinstall: Task<'reinstall'> = async ({ service, driver, secretBox, job }) => {
  const { template_id: templateId, password_enc: passwordEnc, ssh_keys: sshKeys } = job.params;
  const vm = await driver.reinstall(service.id, {
    templateId,
    hostname: service.domainName,
    username: service.username,
    password: secretBox.open(passwordEnc),
    sshKeys,
  });
  return { ...vmChange(vm), templateId, passwordEnc, passwordApplies: 'now', sshKeys };
};

import { runningAsBefore, type Task, vmChange } from '../task.ts';

/**
 * The disk is rebuilt from the template with the new login and keys; the addresses stay and the
 * server ends in the power state it had (the driver's part). The service records the template,
 * the new password (sealed, shown by details as after any change) and the keys. A re-run after an
 * attempt that powered the server off and failed finds it off: it is started at the end if it
 * ran when the job began (the state the job recorded at its first start).
 */
export const reinstall: Task<'reinstall'> = async (tc) => {
  const { service, driver, secretBox, job } = tc;
  const { template_id: templateId, password_enc: passwordEnc, ssh_keys: sshKeys } = job.params;
  const rebuilt = await driver.reinstall(service.id, {
    templateId,
    hostname: service.domainName,
    username: service.username,
    password: secretBox.open(passwordEnc),
    sshKeys,
  });
  const vm = await runningAsBefore(tc, rebuilt);
  return { ...vmChange(vm), templateId, passwordEnc, passwordApplies: 'now', sshKeys };
};

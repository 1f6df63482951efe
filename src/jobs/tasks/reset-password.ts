import type { Task } from '../task.ts';

/**
 * The new password travels in the job encrypted, like the stored one. The driver says whether
 * the running guest has it already (its guest agent set it) or gets it at its next boot; the
 * job's result and the service's details say the same (docs/api.md, "Password resets").
 */
export const resetPassword: Task<'reset_password'> = async ({ service, driver, secretBox, job }) => {
  const sealed = job.params.password_enc;
  const passwordApplies = await driver.setPassword(service.id, service.username, secretBox.open(sealed));
  return { passwordEnc: sealed, passwordApplies };
};

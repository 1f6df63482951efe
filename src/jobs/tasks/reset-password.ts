import type { Task } from '../task.ts';

/** The new password travels in the job encrypted, like the stored one. */
export const resetPassword: Task<'reset_password'> = async ({ service, driver, secretBox, job }) => {
  const sealed = job.params.password_enc;
  await driver.setPassword(service.id, service.username, secretBox.open(sealed));
  return { passwordEnc: sealed };
};

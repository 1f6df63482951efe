import { type Task, vmPatch } from '../task.ts';

export const create: Task<'create'> = async ({ service, driver, secretBox }) => {
  const vm = await driver.create({
    vmId: service.id,
    hostname: service.domainName,
    username: service.username,
    password: secretBox.open(service.passwordEnc),
    templateId: service.templateId,
    cpu: service.cpu,
    ramGb: service.ram,
    diskGb: service.hdd,
    ipCount: service.ipCount,
  });
  return vmPatch(vm);
};

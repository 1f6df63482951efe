import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A template for the 2 GB benches, in `work/template`: the tiny test template's kernel and
 * initrd, its disk grown to 2 GB with 1 GB of random data written past the guest's own file
 * system (from 1 GiB on). Returns its directory.
 */
export function bigTemplate(template: string, work: string): string {
  const big = join(work, 'template');
  mkdirSync(big, { recursive: true });
  for (const f of ['vmlinuz', 'initrd.img']) copyFileSync(join(template, f), join(big, f));
  execFileSync('qemu-img', ['convert', '-O', 'qcow2', join(template, 'disk.qcow2'), join(big, 'disk.qcow2')]);
  execFileSync('qemu-img', ['resize', '-q', join(big, 'disk.qcow2'), '2G']);
  const random = join(work, 'random');
  execFileSync('sh', ['-c', `head -c ${1024 ** 3} /dev/urandom > ${random}`]);
  execFileSync('qemu-io', ['-f', 'qcow2', '-c', `write -s ${random} 1G 1G`, join(big, 'disk.qcow2')], {
    stdio: 'ignore',
  });
  rmSync(random);
  return big;
}

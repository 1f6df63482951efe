import { execFile } from 'node:child_process';
import { DriverError } from '../driver.ts';

export interface CommandResult {
  readonly stdout: string;
  readonly stderr: string;
}

/** Messages of libvirt and QEMU that mean "try again later", not "this cannot work". */
const TRANSIENT =
  /failed to connect|Cannot recv data|End of file while reading|Timed out during operation|cannot acquire state change lock|Connection reset|Broken pipe|is not running.*daemon|Failed to get "write" lock/i;

/**
 * Runs virsh or qemu-img. Failures become DriverErrors with a readable message for the
 * reseller (`what`) and libvirt's own words kept as the cause, for the logs only.
 */
export function run(
  command: string,
  args: readonly string[],
  what: string,
  timeoutMs = 120_000,
): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      [...args],
      { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (!err) return resolve({ stdout, stderr });
        const detail = `${command} ${args.join(' ')}: ${stderr || err.message}`.trim();
        const transient = (err as { killed?: boolean }).killed === true || TRANSIENT.test(stderr);
        reject(
          new DriverError(`${what}${transient ? ' (the host did not answer; will retry)' : ''}`, {
            transient,
            cause: new Error(detail),
          }),
        );
      },
    );
  });
}

/** A virsh call on one host's connection. */
export function virsh(
  uri: string,
  args: readonly string[],
  what: string,
  timeoutMs?: number,
): Promise<CommandResult> {
  return run('virsh', ['-c', uri, ...args], what, timeoutMs);
}

/** virsh's words for "there is no such domain", which idempotent operations accept. */
export function isNoDomain(err: unknown): boolean {
  const cause = (err as { cause?: { message?: string } })?.cause?.message ?? '';
  return /failed to get domain|Domain not found|no domain with matching/i.test(cause);
}

export function isNotRunning(err: unknown): boolean {
  const cause = (err as { cause?: { message?: string } })?.cause?.message ?? '';
  return /domain is not running|not running/i.test(cause);
}

/**
 * A wrapper ahead of the real `virsh` on PATH, for real-VM tests that need one host command to fail
 * the way a dropped connection does. While a refusal is set, a command every one of whose words
 * appears in one of its arguments (the command's name, a volume, a host's URI) exits 1 with
 * libvirt's message for a lost connection, or the one given; every other command is the real
 * virsh's.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface VirshWrapper {
  /**
   * Refuses the commands that carry every one of `words` (each a substring of some argument),
   * with `stderr` (default: libvirt's words for a connection that was reset).
   */
  refuse(words: string[], stderr?: string): void;
  /** Every command goes through again. */
  allow(): void;
  /** PATH as it was, and the wrapper gone. */
  remove(): void;
}

export function installVirshWrapper(): VirshWrapper {
  const dir = mkdtempSync(join(tmpdir(), 'vrp-virsh-wrapper-'));
  const rule = join(dir, 'refuse');
  const message = join(dir, 'message');
  const realVirsh = execFileSync('sh', ['-c', 'command -v virsh'], { encoding: 'utf8' }).trim();
  writeFileSync(
    join(dir, 'virsh'),
    `#!/bin/sh
if [ -e ${JSON.stringify(rule)} ]; then
  all=1
  while IFS= read -r w; do
    found=
    for a in "$@"; do
      case "$a" in *"$w"*) found=1;; esac
    done
    [ -z "$found" ] && all=
  done < ${JSON.stringify(rule)}
  if [ -n "$all" ]; then
    cat ${JSON.stringify(message)} >&2
    exit 1
  fi
fi
exec ${JSON.stringify(realVirsh)} "$@"
`,
  );
  chmodSync(join(dir, 'virsh'), 0o755);
  const savedPath = process.env.PATH;
  process.env.PATH = `${dir}:${savedPath}`;
  return {
    refuse(words, stderr = 'error: Cannot recv data: Connection reset by peer') {
      writeFileSync(message, `${stderr}\n`);
      writeFileSync(rule, `${words.join('\n')}\n`);
    },
    allow() {
      rmSync(rule, { force: true });
    },
    remove() {
      process.env.PATH = savedPath;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

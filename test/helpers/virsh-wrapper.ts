/**
 * A wrapper ahead of the real `virsh` on PATH, for real-VM tests that need one host command to fail
 * the way a dropped connection does. While a refusal is set, a command every one of whose words
 * appears in one of its arguments (the command's name, a volume, a host's URI) exits 1 with
 * libvirt's message for a lost connection, or the one given (before it runs, or after); every other
 * command is the real virsh's. A hold makes the matching commands wait before they start, until it is lifted.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface VirshWrapper {
  /**
   * Refuses the commands that carry every one of `words` (each a substring of some argument),
   * with `stderr` (default: libvirt's words for a connection that was reset).
   */
  refuse(words: string[], stderr?: string): void;
  /**
   * Runs the commands that carry every one of `words`, then fails them (exit 1, `stderr`) as a
   * connection dropped at their end does: what they did is done, their caller is told otherwise.
   */
  failAfter(words: string[], stderr?: string): void;
  /**
   * Holds the commands that carry every one of `words` before they start, until `allow()`:
   * `holding()` says when one is waiting.
   */
  hold(words: string[]): void;
  /** True once a held command is waiting. */
  holding(): boolean;
  /** Every command goes through again, the held ones too. */
  allow(): void;
  /** PATH as it was, and the wrapper gone. */
  remove(): void;
}

export function installVirshWrapper(): VirshWrapper {
  const dir = mkdtempSync(join(tmpdir(), 'vrp-virsh-wrapper-'));
  const rule = join(dir, 'refuse');
  const message = join(dir, 'message');
  const holdRule = join(dir, 'hold');
  const afterRule = join(dir, 'fail-after');
  const held = join(dir, 'held');
  const realVirsh = execFileSync('sh', ['-c', 'command -v virsh'], { encoding: 'utf8' }).trim();
  writeFileSync(
    join(dir, 'virsh'),
    `#!/bin/sh
# matches RULE ARGS...: RULE exists and each of its words is in one of ARGS.
matches() {
  rule=$1
  shift
  [ -e "$rule" ] || return 1
  while IFS= read -r w; do
    found=
    for a in "$@"; do
      case "$a" in *"$w"*) found=1;; esac
    done
    [ -z "$found" ] && return 1
  done < "$rule"
  return 0
}
if matches ${JSON.stringify(holdRule)} "$@"; then
  touch ${JSON.stringify(held)}
  while [ -e ${JSON.stringify(holdRule)} ]; do sleep 0.05; done
fi
if matches ${JSON.stringify(rule)} "$@"; then
  cat ${JSON.stringify(message)} >&2
  exit 1
fi
if matches ${JSON.stringify(afterRule)} "$@"; then
  ${JSON.stringify(realVirsh)} "$@"
  cat ${JSON.stringify(message)} >&2
  exit 1
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
    failAfter(words, stderr = 'error: Cannot recv data: Connection reset by peer') {
      writeFileSync(message, `${stderr}\n`);
      writeFileSync(afterRule, `${words.join('\n')}\n`);
    },
    hold(words) {
      rmSync(held, { force: true });
      writeFileSync(holdRule, `${words.join('\n')}\n`);
    },
    holding: () => existsSync(held),
    allow() {
      rmSync(rule, { force: true });
      rmSync(afterRule, { force: true });
      rmSync(holdRule, { force: true });
      rmSync(held, { force: true });
    },
    remove() {
      process.env.PATH = savedPath;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

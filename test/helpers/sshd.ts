/**
 * A throwaway OpenSSH server for the SFTP backup store's tests: Debian's `sshd` run by the test
 * as the current user, on 127.0.0.1 and a free port, with host keys (ed25519, ECDSA), a client key and its
 * authorized_keys generated into a temporary directory, serving SFTP in-process
 * (`internal-sftp`). Nothing of the machine's own ssh set-up is read or changed.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../scripts/postgres.ts';
import { WAIT_MS } from './budget.ts';
import { toolPath } from './tools.ts';

export interface Sshd {
  readonly host: '127.0.0.1';
  readonly port: number;
  readonly username: string;
  /** The private key the server accepts (OpenSSH format), and its file. */
  readonly clientKey: string;
  readonly clientKeyFile: string;
  /** A private key the server does not accept. */
  readonly strangerKey: string;
  /** The server's host key: its public key line (`ssh-ed25519 AAAA... vrp-test`) and its fingerprint (`SHA256:...`, from `ssh-keygen -lf`). */
  readonly hostPublicKey: string;
  readonly hostKeyFingerprint: string;
  /** Its second host key, ECDSA (a client asks for ed25519 first), as a public key line. */
  readonly hostEcdsaPublicKey: string;
  /** The stranger key's public half and fingerprint: a key that is not the server's host key. */
  readonly strangerPublicKey: string;
  readonly strangerFingerprint: string;
  /** A directory of this machine, the same the server's SFTP sees (the tests' store root goes under it). */
  readonly dir: string;
  /** Ends the connections the server has open (the listener stays). */
  dropConnections(): void;
  /**
   * Stops the processes of the connections open now (SIGSTOP), as a server whose file system
   * hangs: they answer nothing, the listener takes new ones. Returns what lets them go on.
   */
  pauseConnections(): () => void;
  /** Stops the server and its connections; `start` runs it again on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops it and removes its directory. */
  close(): Promise<void>;
}

function keygen(file: string, type = 'ed25519'): string {
  const r = spawnSync('ssh-keygen', ['-q', '-t', type, '-N', '', '-C', 'vrp-test', '-f', file], {
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`ssh-keygen failed: ${r.stderr || r.error?.message}`);
  return readFileSync(file, 'utf8');
}

/** The fingerprint `ssh-keygen -lf` prints for a key file (`SHA256:...`). */
function fingerprint(file: string): string {
  const r = spawnSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', file], { encoding: 'utf8' });
  const fp = /\bSHA256:[A-Za-z0-9+/]+/.exec(r.stdout)?.[0];
  if (r.status !== 0 || !fp) throw new Error(`ssh-keygen -lf failed: ${r.stderr || r.error?.message}`);
  return fp;
}

/** The processes whose parent is `pid` (sshd's per-connection processes). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid ...: comm may hold spaces and parentheses.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(entry));
    } catch {}
  }
  return out;
}

/** `sftp: false`: a server without the SFTP subsystem (logins work, SFTP sessions are refused). */
export async function startSshd(o: { sftp?: boolean } = {}): Promise<Sshd> {
  const sshd = toolPath('sshd');
  const dir = mkdtempSync(join(tmpdir(), 'vrp-sshd-'));
  const hostKey = join(dir, 'host_key');
  const clientKeyFile = join(dir, 'client_key');
  keygen(hostKey);
  const ecdsaHostKey = join(dir, 'host_key_ecdsa');
  keygen(ecdsaHostKey, 'ecdsa');
  const clientKey = keygen(clientKeyFile);
  const strangerKey = keygen(join(dir, 'stranger_key'));
  writeFileSync(join(dir, 'authorized_keys'), readFileSync(`${clientKeyFile}.pub`), { mode: 0o600 });
  const port = await freePort();
  const username = userInfo().username;
  const config = join(dir, 'sshd_config');
  writeFileSync(
    config,
    [
      'ListenAddress 127.0.0.1',
      `Port ${port}`,
      `HostKey ${hostKey}`,
      `HostKey ${ecdsaHostKey}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
      'StrictModes no',
      'PubkeyAuthentication yes',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'UsePAM no',
      'PermitRootLogin prohibit-password',
      `AllowUsers ${username}`,
      ...(o.sftp === false ? [] : ['Subsystem sftp internal-sftp']),
      'LogLevel INFO',
      '',
    ].join('\n'),
  );
  // As root, sshd separates privileges into this empty directory, which Debian's service makes
  // at boot; a user's sshd does not need it.
  if (process.getuid?.() === 0) mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });

  let child: ChildProcess | undefined;
  const start = async (): Promise<void> => {
    const proc = spawn(sshd, ['-D', '-e', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
    child = proc;
    let log = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`sshd did not listen within ${WAIT_MS} ms:\n${log}`)),
        WAIT_MS,
      );
      proc.stderr?.setEncoding('utf8').on('data', (d: string) => {
        log += d;
        if (log.includes('Server listening on')) {
          clearTimeout(timer);
          resolve();
        }
      });
      proc.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`sshd exited (${code}) before it listened:\n${log}`));
      });
      proc.once('error', reject);
    });
  };
  const dropConnections = () => {
    if (child?.pid === undefined) return;
    for (const pid of childrenOf(child.pid)) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {}
    }
  };
  const pauseConnections = () => {
    const descendants = (pid: number): number[] => childrenOf(pid).flatMap((c) => [c, ...descendants(c)]);
    const paused = child?.pid === undefined ? [] : descendants(child.pid);
    const signal = (name: NodeJS.Signals) => {
      for (const pid of paused) {
        try {
          process.kill(pid, name);
        } catch {}
      }
    };
    signal('SIGSTOP');
    return () => signal('SIGCONT');
  };
  const stop = async (): Promise<void> => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const sessions = proc.pid === undefined ? [] : childrenOf(proc.pid);
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGTERM');
    await exited;
    for (const pid of sessions) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {}
    }
  };
  await start();
  return {
    host: '127.0.0.1',
    port,
    username,
    clientKey,
    clientKeyFile,
    strangerKey,
    hostPublicKey: readFileSync(`${hostKey}.pub`, 'utf8').trim(),
    hostKeyFingerprint: fingerprint(`${hostKey}.pub`),
    hostEcdsaPublicKey: readFileSync(`${ecdsaHostKey}.pub`, 'utf8').trim(),
    strangerPublicKey: readFileSync(join(dir, 'stranger_key.pub'), 'utf8').trim(),
    strangerFingerprint: fingerprint(join(dir, 'stranger_key.pub')),
    dir,
    dropConnections,
    pauseConnections,
    stop,
    start,
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

import { Duplex } from 'node:stream';

export interface SerialConsoleOptions {
  /** The VM's host name: in the banner, the login prompt and the shell's prompt. */
  readonly hostname: string;
  /** Whether `password` is root's password now (asked at each login, so a reset counts at once). */
  readonly checkPassword: (password: string) => Promise<boolean>;
}

const ENTER = new Set([0x0d, 0x0a]);
const ERASE = new Set([0x08, 0x7f]);
const CTRL_C = 0x03;
const CTRL_D = 0x04;

/**
 * The serial console of a simulated VM, as a terminal sees a Linux guest's: a banner and
 * `<host> login: `, the typed name echoed, `Password: ` not echoed, then for root with the VM's
 * password a tiny shell (`hostname`, `echo`, `whoami`, `exit`) whose prompt is
 * `root@<host>:~# `. Bytes written to the stream are keystrokes; what it reads out is the
 * terminal's output, with CR LF line ends. Enter is CR, LF or CR LF (one Enter); Backspace and
 * DEL erase a character; Ctrl-C drops the line; Ctrl-D at an empty prompt logs out.
 */
export function createSerialConsole(o: SerialConsoleOptions): Duplex {
  let state: 'login' | 'password' | 'shell' = 'login';
  let line = '';
  let user = '';
  let lastWasCr = false;
  // Inside an escape sequence (an arrow key's `ESC [ A`): 'esc' after ESC, 'csi' after `ESC [`.
  let inEscape: 'none' | 'esc' | 'csi' = 'none';

  const loginPrompt = () => `${o.hostname} login: `;
  const shellPrompt = () => `root@${o.hostname}:~# `;

  const stream = new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, done) {
      handle(chunk).then(
        () => done(),
        (err: unknown) => done(err instanceof Error ? err : new Error(String(err))),
      );
    },
    final(done) {
      stream.push(null);
      done();
    },
  });
  const out = (text: string) => {
    if (!stream.destroyed) stream.push(Buffer.from(text, 'utf8'));
  };

  function run(command: string): string {
    const name = command.trim().split(/\s+/)[0] ?? '';
    switch (name) {
      case '':
        return '';
      case 'hostname':
        return `${o.hostname}\r\n`;
      case 'whoami':
        return 'root\r\n';
      case 'echo':
        return `${command.trim().slice(4).trim()}\r\n`;
      default:
        return `-bash: ${name}: command not found\r\n`;
    }
  }

  function logout(): void {
    state = 'login';
    out(`logout\r\n\r\n${loginPrompt()}`);
  }

  async function enter(): Promise<void> {
    const typed = line;
    line = '';
    out('\r\n');
    if (state === 'login') {
      if (typed === '') return out(loginPrompt());
      user = typed;
      state = 'password';
      return out('Password: ');
    }
    if (state === 'password') {
      const ok = user === 'root' && (await o.checkPassword(typed));
      if (!ok) {
        state = 'login';
        return out(`\r\nLogin incorrect\r\n${loginPrompt()}`);
      }
      state = 'shell';
      return out(`Last login: never on ttyS0\r\n${shellPrompt()}`);
    }
    if (typed.trim() === 'exit' || typed.trim() === 'logout') return logout();
    out(run(typed) + shellPrompt());
  }

  async function handle(chunk: Buffer): Promise<void> {
    for (const text of chunk.toString('utf8')) {
      const code = text.codePointAt(0) ?? 0;
      const crlf = lastWasCr && code === 0x0a;
      lastWasCr = code === 0x0d;
      if (crlf) continue;
      if (inEscape === 'esc') {
        inEscape = text === '[' || text === 'O' ? 'csi' : 'none';
        continue;
      }
      if (inEscape === 'csi') {
        if (code >= 0x40 && code <= 0x7e) inEscape = 'none';
        continue;
      }
      if (code === 0x1b) {
        inEscape = 'esc';
        continue;
      }
      if (ENTER.has(code)) {
        await enter();
      } else if (ERASE.has(code)) {
        if (line.length === 0) continue;
        line = [...line].slice(0, -1).join('');
        if (state !== 'password') out('\b \b');
      } else if (code === CTRL_C) {
        line = '';
        if (state === 'password') state = 'login';
        out(`^C\r\n${state === 'shell' ? shellPrompt() : loginPrompt()}`);
      } else if (code === CTRL_D) {
        if (state === 'shell' && line === '') logout();
      } else if (code >= 0x20 && code !== 0x7f) {
        line += text;
        if (state !== 'password') out(text);
      }
      // Other control characters and inEscape sequences (arrow keys) do nothing: no line editing.
    }
  }

  out(`\r\nDebian GNU/Linux 12 ${o.hostname} ttyS0\r\n\r\n${loginPrompt()}`);
  return stream;
}

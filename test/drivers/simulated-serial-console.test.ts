import assert from 'node:assert/strict';
import type { Duplex } from 'node:stream';
import { describe, test } from 'node:test';
import { createSerialConsole } from '../../src/drivers/simulated/serial-console.ts';

/** The terminal's side of a console: what it shows, and a wait for text to appear. */
function terminal(stream: Duplex) {
  let shown = '';
  let wake: (() => void) | undefined;
  stream.on('data', (chunk: Buffer) => {
    shown += chunk.toString('utf8');
    wake?.();
  });
  return {
    shown: () => shown,
    type: (keys: string) => stream.write(keys),
    async waitFor(text: string, from = 0): Promise<number> {
      while (!shown.includes(text, from)) await new Promise<void>((resolve) => (wake = resolve));
      return shown.indexOf(text, from) + text.length;
    },
  };
}

const consoleOf = (password = 's3cret-Pass') =>
  createSerialConsole({ hostname: 'web1.example.com', checkPassword: async (p) => p === password });

describe('the simulated serial console', () => {
  test('a banner and a login prompt; root with the password gets a shell that answers', async () => {
    const term = terminal(consoleOf());
    let at = await term.waitFor('web1.example.com login: ');
    assert.match(term.shown(), /Debian GNU\/Linux .* web1\.example\.com ttyS0/);
    term.type('root\r');
    at = await term.waitFor('root\r\nPassword: ', at);
    term.type('s3cret-Pass\r\n');
    at = await term.waitFor('root@web1.example.com:~# ', at);
    assert.ok(!term.shown().includes('s3cret-Pass'), 'the password is not echoed');
    term.type('hostname\r');
    at = await term.waitFor('hostname\r\nweb1.example.com\r\nroot@web1.example.com:~# ', at);
    term.type('echo  hi there\r');
    at = await term.waitFor('hi there\r\nroot@web1.example.com:~# ', at);
    term.type('whoami\n');
    at = await term.waitFor('root\r\nroot@web1.example.com:~# ', at);
    term.type('ls\r');
    at = await term.waitFor('-bash: ls: command not found\r\n', at);
    term.type('exit\r');
    await term.waitFor('logout\r\n\r\nweb1.example.com login: ', at);
  });

  test('a wrong password or another user is refused; Backspace erases; CR LF is one Enter', async () => {
    const term = terminal(consoleOf());
    let at = await term.waitFor('login: ');
    term.type('admin\r\n');
    at = await term.waitFor('Password: ', at);
    term.type('s3cret-Pass\r');
    at = await term.waitFor('Login incorrect\r\nweb1.example.com login: ', at);
    term.type('rooX\x7ft\r');
    at = await term.waitFor('rooX\b \bt\r\nPassword: ', at);
    term.type('wrong\r');
    at = await term.waitFor('Login incorrect\r\n', at);
    // An arrow key's escape sequence is not typed text.
    term.type('ro\x1b[Aot\r');
    at = await term.waitFor('root\r\nPassword: ', at);
    term.type('s3cret-Pass\r');
    await term.waitFor('root@web1.example.com:~# ', at);
    // CR LF gave one Enter each time: no second prompt after a login prompt's answer.
    assert.equal(term.shown().split('Password: ').length - 1, 3);
  });

  test('Ctrl-C abandons a line or a password prompt; Ctrl-D on an empty shell line logs out; Backspace on nothing does nothing; an empty command', async () => {
    const stream = consoleOf();
    const term = terminal(stream);
    let at = await term.waitFor('login: ');
    term.type('\x7froot\r');
    at = await term.waitFor('root\r\nPassword: ', at);
    term.type('half\x03');
    at = await term.waitFor('^C\r\nweb1.example.com login: ', at);
    term.type('root\r');
    at = await term.waitFor('Password: ', at);
    term.type('s3cret-Pass\r');
    at = await term.waitFor('root@web1.example.com:~# ', at);
    term.type('abc\x03');
    at = await term.waitFor('abc^C\r\nroot@web1.example.com:~# ', at);
    term.type('\r');
    at = await term.waitFor('\r\nroot@web1.example.com:~# ', at);
    term.type('x\x04');
    term.type('\x7f\x04');
    at = await term.waitFor('logout\r\n', at);
    // The terminal's end ends the console's output too.
    const ended = new Promise<void>((resolve) => stream.on('end', resolve));
    stream.end();
    await ended;
  });
});

#!/usr/bin/env node
// The `vrp` command: `bin/vrp.js ...` in a checkout (or `npx vrp ...`). It needs Node 24 (it
// runs TypeScript by type stripping, as package.json's `engines` says). `npm ci` installs the
// project's own Node 24 (the `node` dev dependency); when an older Node runs this file, it hands
// over to that one, so the command works whatever Node is first on PATH and without npm.
// Plain JavaScript that Node 18 and later can parse, since any of them may be the one starting it.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const REQUIRED_MAJOR = 24;

if (Number(process.versions.node.split('.')[0]) === REQUIRED_MAJOR) {
  await import('../src/cli/main.ts');
} else {
  const own = fileURLToPath(new URL('../node_modules/.bin/node', import.meta.url));
  if (!existsSync(own)) {
    process.stderr.write(
      `vrp: needs Node.js ${REQUIRED_MAJOR} (this is ${process.version}); ` +
        `npm ci installs it into node_modules, or put Node.js ${REQUIRED_MAJOR} first on PATH\n`,
    );
    process.exit(1);
  }
  const child = spawn(own, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
  // `vrp serve` shuts down gracefully on these; pass them on (a terminal's Ctrl-C reaches both).
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  for (const signal of signals) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => {
    if (signal) {
      for (const s of signals) process.removeAllListeners(s);
      process.kill(process.pid, signal);
    } else {
      process.exit(code ?? 1);
    }
  });
}

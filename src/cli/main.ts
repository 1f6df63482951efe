/** The `vrp` process: runs one command (run.ts) and exits with its code. */
import { runCli } from './run.ts';

const code = await runCli(process.argv.slice(2));
if (code !== undefined) process.exit(code);

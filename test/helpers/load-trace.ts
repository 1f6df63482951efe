/**
 * Loaded with `--import` into a server process (NODE_OPTIONS), it appends the URL of every module
 * the process loads to the file VRP_TEST_LOAD_TRACE names: which libraries a process holds.
 */
import { appendFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const file = process.env['VRP_TEST_LOAD_TRACE'];
if (file) {
  registerHooks({
    load(url, context, next) {
      appendFileSync(file, `${url}\n`);
      return next(url, context);
    },
  });
}

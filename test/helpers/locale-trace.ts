/**
 * Loaded with `--import` into a server process (NODE_OPTIONS), it records each call of a
 * built-in that reads the Unicode library's locale data (formatting or comparing for a locale,
 * `Intl`), with the caller, to the file VRP_TEST_LOCALE_TRACE names: the first such call pages
 * megabytes of that data into the process for good (src/domain/code-unit-text.ts).
 */
import { appendFileSync } from 'node:fs';

const file = process.env['VRP_TEST_LOCALE_TRACE'];

/** The first frame of the stack outside this file: who made the call. */
function caller(): string {
  const frames = (new Error().stack ?? '').split('\n').slice(1);
  return frames.find((f) => !f.includes('locale-trace'))?.trim() ?? '(unknown)';
}

function record(name: string): void {
  appendFileSync(file!, `${name} ${caller()}\n`);
}

function trace(owner: object, key: string, name: string): void {
  const original = Reflect.get(owner, key) as (...args: unknown[]) => unknown;
  Reflect.set(owner, key, function (this: unknown, ...args: unknown[]) {
    record(name);
    return original.apply(this, args);
  });
}

if (file) {
  trace(Number.prototype, 'toLocaleString', 'Number.toLocaleString');
  trace(BigInt.prototype, 'toLocaleString', 'BigInt.toLocaleString');
  trace(Array.prototype, 'toLocaleString', 'Array.toLocaleString');
  for (const key of ['localeCompare', 'normalize', 'toLocaleLowerCase', 'toLocaleUpperCase'])
    trace(String.prototype, key, `String.${key}`);
  for (const key of ['toLocaleString', 'toLocaleDateString', 'toLocaleTimeString'])
    trace(Date.prototype, key, `Date.${key}`);
  for (const key of Object.getOwnPropertyNames(Intl)) {
    const value = Reflect.get(Intl, key);
    if (typeof value !== 'function') continue;
    Reflect.set(
      Intl,
      key,
      new Proxy(value, {
        construct(target, args, newTarget) {
          record(`Intl.${key}`);
          return Reflect.construct(target, args, newTarget);
        },
        apply(target, self, args) {
          record(`Intl.${key}`);
          return Reflect.apply(target, self, args);
        },
      }),
    );
  }
}

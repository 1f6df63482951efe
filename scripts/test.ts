/**
 * `npm test`: the whole suite with Node's test runner. Arguments narrow it:
 * `npm test -- test/http` runs one folder, `npm test -- --test-name-pattern=oauth` one name.
 */
import { spawnSync } from 'node:child_process';

const args = process.argv.slice(2);
const paths = args.filter((a) => !a.startsWith('--'));
const flags = args.filter((a) => a.startsWith('--'));
const patterns =
  paths.length > 0
    ? paths.map((p) => (p.endsWith('.ts') ? p : `${p.replace(/\/$/, '')}/**/*.test.ts`))
    : ['test/**/*.test.ts'];

const result = spawnSync(
  process.execPath,
  ['--test', '--test-concurrency=2', '--test-timeout=120000', ...flags, ...patterns],
  { stdio: 'inherit', env: { ...process.env, NODE_ENV: 'test' } },
);
process.exit(result.status ?? 1);

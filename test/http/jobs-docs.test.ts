/**
 * docs/api.md's Jobs section against the code: the actions it lists are every job action
 * (JOB_ACTIONS, the enum of a job's `action`), its table of results names the actions whose task
 * reports one, and its failed-job table gives, for every action, each status a failure of it can
 * leave. Before, the section knew the twelve actions of the interface document only and said
 * that reset_password alone had a result, while a reinstall reports one too (what the jobs list
 * shows is checked in reinstall.test.ts).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import {
  decide,
  JOB_ACTIONS,
  type JobAction,
  STABLE_STATUSES,
  statusAfterFailure,
} from '../../src/domain/status-machine.ts';

const doc = readFileSync('docs/api.md', 'utf8');
const start = doc.indexOf('### Jobs');
const section = doc.slice(start, doc.indexOf('\n### ', start + 1));

/** The rows of the table whose header line is `heading`: first cell, second cell. */
function tableAfter(heading: string): [string, string][] {
  const from = section.indexOf(heading);
  assert.ok(from >= 0, `the Jobs section has "${heading}"`);
  const rows: [string, string][] = [];
  for (const line of section.slice(from).split('\n').slice(1)) {
    if (!line.startsWith('|')) {
      if (rows.length > 0) break;
      continue;
    }
    const [, first = '', second = ''] = line.split('|').map((c) => c.trim());
    if (!/^-+$/.test(first)) rows.push([first, second]);
  }
  return rows;
}
const codes = (cell: string) => [...cell.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!);

test('the Jobs section lists every action a job can have', () => {
  const list = section.slice(0, section.indexOf('A job is:'));
  const missing = JOB_ACTIONS.filter((a) => !new RegExp(`\\b${a}\\b`).test(list));
  assert.deepEqual(missing, [], 'actions the list leaves out');
});

test('its table of results names exactly the actions whose task reports when the password applies', () => {
  // jobResultOf makes a result of a change's passwordApplies and of nothing else.
  const reporting = readdirSync('src/jobs/tasks')
    .filter((f) => /\bpasswordApplies\b/.test(readFileSync(`src/jobs/tasks/${f}`, 'utf8')))
    .map((f) => f.replace(/\.ts$/, '').replaceAll('-', '_'))
    .sort();
  const rows = tableAfter('| succeeded job | `result` |');
  const named = rows.flatMap(([first]) => codes(first)).sort();
  assert.deepEqual(named, reporting);
  assert.deepEqual(rows.at(-1), ['every other action', 'null']);
});

test('its failed-job table gives every action, with each status a failure of it leaves', () => {
  const rows = tableAfter('| failed job | service status afterwards |');
  const byAction = new Map<string, string[]>();
  for (const [first, second] of rows) {
    for (const action of codes(first)) {
      assert.ok(!byAction.has(action), `${action} in one row only`);
      byAction.set(action, codes(second));
    }
  }
  assert.deepEqual([...byAction.keys()].sort(), [...JOB_ACTIONS].sort());
  for (const action of JOB_ACTIONS as readonly JobAction[]) {
    for (const from of STABLE_STATUSES) {
      if (decide({ status: from, resume: null }, action).kind !== 'accept') continue;
      const after = statusAfterFailure(action, from);
      assert.ok(
        byAction.get(action)!.includes(after),
        `a failed ${action} from ${from} leaves ${after}; the row says ${byAction.get(action)!.join(', ')}`,
      );
    }
  }
});

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  allowedActions,
  decide,
  OPERATIONS,
  type Operation,
  project,
  STABLE_STATUSES,
  type StableStatus,
  statusAfterFailure,
  transitionalStatus,
} from '../../src/domain/status-machine.ts';

// docs/design/contract.md#service-statuses, written out by hand: 'A' = accepted (job or immediate
// change), 'N' = already there (200, no job), '-' = 400 invalid_state.
// biome-ignore format: the table reads as a table
const TABLE: Record<StableStatus, Record<Operation, 'A' | 'N' | '-'>> = {
  pending: {
    create: 'A', start: '-', stop: '-', restart: '-', suspend: '-', unsuspend: '-', upgrade: '-',
    reset_password: '-', terminate: 'A', backup_create: '-', backup_restore: '-', backup_delete: '-',
    schedule_create: '-', schedule_delete: '-', migrate: '-',
    reinstall: '-', rescue: '-', unrescue: '-',
  },
  running: {
    create: '-', start: 'N', stop: 'A', restart: 'A', suspend: 'A', unsuspend: '-', upgrade: 'A',
    reset_password: 'A', terminate: 'A', backup_create: 'A', backup_restore: 'A', backup_delete: 'A',
    schedule_create: 'A', schedule_delete: 'A', migrate: 'A',
    reinstall: 'A', rescue: 'A', unrescue: '-',
  },
  stopped: {
    create: '-', start: 'A', stop: 'N', restart: '-', suspend: 'A', unsuspend: '-', upgrade: 'A',
    reset_password: 'A', terminate: 'A', backup_create: 'A', backup_restore: 'A', backup_delete: 'A',
    schedule_create: 'A', schedule_delete: 'A', migrate: 'A',
    reinstall: 'A', rescue: 'A', unrescue: '-',
  },
  suspended: {
    create: '-', start: '-', stop: '-', restart: '-', suspend: 'N', unsuspend: 'A', upgrade: '-',
    reset_password: '-', terminate: 'A', backup_create: '-', backup_restore: '-', backup_delete: 'A',
    schedule_create: '-', schedule_delete: 'A', migrate: 'A',
    reinstall: '-', rescue: '-', unrescue: '-',
  },
  failed: {
    create: 'A', start: '-', stop: '-', restart: '-', suspend: '-', unsuspend: '-', upgrade: '-',
    reset_password: '-', terminate: 'A', backup_create: '-', backup_restore: '-', backup_delete: '-',
    schedule_create: '-', schedule_delete: '-', migrate: '-',
    reinstall: '-', rescue: '-', unrescue: '-',
  },
  terminated: {
    create: '-', start: '-', stop: '-', restart: '-', suspend: '-', unsuspend: '-', upgrade: '-',
    reset_password: '-', terminate: 'N', backup_create: '-', backup_restore: '-', backup_delete: '-',
    schedule_create: '-', schedule_delete: '-', migrate: '-',
    reinstall: '-', rescue: '-', unrescue: '-',
  },
  rescue: {
    create: '-', start: '-', stop: '-', restart: '-', suspend: 'A', unsuspend: '-', upgrade: '-',
    reset_password: '-', terminate: 'A', backup_create: '-', backup_restore: '-', backup_delete: '-',
    schedule_create: '-', schedule_delete: '-', migrate: '-',
    reinstall: '-', rescue: '-', unrescue: 'A',
  },
};

const EXPECTED_RESULT: Partial<Record<Operation, StableStatus>> = {
  create: 'running',
  start: 'running',
  stop: 'stopped',
  restart: 'running',
  suspend: 'suspended',
  terminate: 'terminated',
  rescue: 'rescue',
  unrescue: 'running',
};

describe('status machine: every status times every operation', () => {
  for (const status of STABLE_STATUSES) {
    for (const op of OPERATIONS) {
      const expected = TABLE[status][op];
      test(`${op} on ${status} -> ${expected}`, () => {
        const d = decide({ status, resume: status === 'suspended' ? 'running' : null }, op);
        if (expected === '-') {
          assert.equal(d.kind, 'invalid');
          assert.ok(d.kind === 'invalid' && d.message.includes(status), 'message names the status');
          assert.ok(
            d.kind === 'invalid' && d.message.includes(op.replaceAll('_', ' ')),
            'message names the operation',
          );
        } else if (expected === 'N') {
          assert.equal(d.kind, 'noop');
          assert.match(d.kind === 'noop' ? d.message : '', /already/);
        } else {
          assert.equal(d.kind, 'accept');
          const next = d.kind === 'accept' ? d.next.status : undefined;
          assert.equal(next, EXPECTED_RESULT[op] ?? (op === 'unsuspend' ? 'running' : status));
        }
      });
    }
  }

  test("allowed_actions lists exactly the accepted operations, but the operator's migrate", () => {
    for (const status of STABLE_STATUSES) {
      const accepted = OPERATIONS.filter((op) => TABLE[status][op] === 'A' && op !== 'migrate');
      assert.deepEqual([...allowedActions({ status, resume: null })].sort(), [...accepted].sort(), status);
    }
  });
});

describe('suspension remembers the power state', () => {
  test('suspend from stopped, unsuspend returns to stopped', () => {
    const s = decide({ status: 'stopped', resume: null }, 'suspend');
    assert.equal(s.kind, 'accept');
    if (s.kind !== 'accept') return;
    assert.deepEqual(s.next, { status: 'suspended', resume: 'stopped' });
    const u = decide(s.next, 'unsuspend');
    assert.deepEqual(u.kind === 'accept' && u.next, { status: 'stopped', resume: null });
  });
  test('suspend from running, unsuspend returns to running', () => {
    const s = decide({ status: 'running', resume: null }, 'suspend');
    if (s.kind !== 'accept') return assert.fail('suspend refused');
    const u = decide(s.next, 'unsuspend');
    assert.deepEqual(u.kind === 'accept' && u.next, { status: 'running', resume: null });
  });
});

describe('transitions while a job runs, and after failure', () => {
  test('transitional statuses', () => {
    assert.equal(transitionalStatus('create', 'pending'), 'provisioning');
    assert.equal(transitionalStatus('start', 'stopped'), 'starting');
    assert.equal(transitionalStatus('stop', 'running'), 'stopping');
    assert.equal(transitionalStatus('restart', 'running'), 'restarting');
    assert.equal(transitionalStatus('upgrade', 'stopped'), 'upgrading');
    assert.equal(transitionalStatus('backup_restore', 'running'), 'restoring');
    assert.equal(transitionalStatus('terminate', 'suspended'), 'terminating');
    assert.equal(transitionalStatus('reset_password', 'running'), 'running');
    assert.equal(transitionalStatus('suspend', 'running'), 'running');
  });
  test('a failed provisioning is failed; other failures keep the status', () => {
    assert.equal(statusAfterFailure('create', 'pending'), 'failed');
    assert.equal(statusAfterFailure('stop', 'running'), 'running');
    assert.equal(statusAfterFailure('upgrade', 'stopped'), 'stopped');
  });
  test('projection skips actions that would be refused', () => {
    // create failed: the service is failed; the queued start would be refused, terminate still runs.
    assert.deepEqual(project({ status: 'failed', resume: null }, ['start', 'terminate']), {
      status: 'terminated',
      resume: null,
    });
    assert.deepEqual(project({ status: 'running', resume: null }, ['suspend', 'terminate']), {
      status: 'terminated',
      resume: null,
    });
    assert.deepEqual(project({ status: 'running', resume: null }, ['stop', 'suspend']), {
      status: 'suspended',
      resume: 'stopped',
    });
  });
});

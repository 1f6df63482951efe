/**
 * The backup stores (src/drivers/backup-store/): one suite run against each, on real servers
 * this file starts on loopback (OpenSSH's sshd for SFTP, s3rver for S3), then what each does
 * when its far side is not there, refuses the key or does not answer.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { freePort } from '../../scripts/postgres.ts';
import { loadConfig } from '../../src/config.ts';
import { createBackupStore } from '../../src/drivers/backup-store/index.ts';
import { localBackupStore } from '../../src/drivers/backup-store/local.ts';
import { s3BackupStore } from '../../src/drivers/backup-store/s3.ts';
import { sftpBackupStore } from '../../src/drivers/backup-store/sftp.ts';
import { type BackupStore, BackupStoreError } from '../../src/drivers/backup-store/store.ts';
import { WAIT_MS, waitUntil } from '../helpers/budget.ts';
import { type S3Server, startS3 } from '../helpers/s3.ts';
import { type Sshd, startSshd } from '../helpers/sshd.ts';
import { missingTool } from '../helpers/tools.ts';

const MiB = 1024 * 1024;
/** Several S3 parts (the S3 store is given 5 MiB parts below) and many SFTP writes. */
const BIG = 12 * MiB + 12_345;
const CHUNK = 64 * 1024;

/** Byte `offset` of the pattern `seed`: blocks of SHA-256, so no two places look alike. */
function pattern(seed: string, offset: number, length: number): Buffer {
  const first = Math.floor(offset / 32);
  const last = Math.floor((offset + length - 1) / 32);
  const blocks: Buffer[] = [];
  for (let b = first; b <= last; b++) blocks.push(createHash('sha256').update(`${seed}:${b}`).digest());
  const start = offset - first * 32;
  return Buffer.concat(blocks).subarray(start, start + length);
}

/** `bytes` of the pattern, made chunk by chunk as the store reads them (never held whole). */
async function* generated(seed: string, bytes: number, failAt?: number): AsyncGenerator<Buffer> {
  for (let at = 0; at < bytes; at += CHUNK) {
    if (failAt !== undefined && at >= failAt) throw new Error('the source broke');
    yield pattern(seed, at, Math.min(CHUNK, bytes - at));
  }
}

function sha256Of(seed: string, bytes: number): string {
  const h = createHash('sha256');
  for (let at = 0; at < bytes; at += CHUNK) h.update(pattern(seed, at, Math.min(CHUNK, bytes - at)));
  return h.digest('hex');
}

async function digest(stream: Readable): Promise<{ sha256: string; bytes: number }> {
  const h = createHash('sha256');
  let bytes = 0;
  for await (const chunk of stream) {
    h.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  return { sha256: h.digest('hex'), bytes };
}

async function bytes(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of stream) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}

/** Compares lengths first: a diff of a whole object against a few bytes would not end. */
function sameBytes(actual: Buffer, expected: Buffer): void {
  assert.equal(actual.length, expected.length, 'bytes');
  assert.ok(actual.equals(expected), 'other bytes than expected');
}

async function text(stream: Readable): Promise<string> {
  return (await bytes(stream)).toString('utf8');
}

function one(line: string): AsyncGenerator<Buffer> {
  return (async function* () {
    yield Buffer.from(line);
  })();
}

/** Asserts a BackupStoreError of this kind that names the store and leaks none of `secrets`. */
async function rejectsWith(
  promise: Promise<unknown>,
  expected: { transient: boolean; missing: boolean; names: string; says?: RegExp; secrets?: string[] },
): Promise<BackupStoreError> {
  let caught: unknown;
  await promise.then(
    () => assert.fail('expected a BackupStoreError'),
    (err: unknown) => {
      caught = err;
    },
  );
  assert.ok(caught instanceof BackupStoreError, `expected a BackupStoreError, got ${String(caught)}`);
  assert.equal(caught.transient, expected.transient, caught.message);
  assert.equal(caught.missing, expected.missing, caught.message);
  assert.ok(caught.message.includes(expected.names), `"${caught.message}" should name ${expected.names}`);
  if (expected.says) assert.match(caught.message, expected.says);
  for (const secret of expected.secrets ?? [])
    assert.ok(!caught.message.includes(secret), `"${caught.message}" shows a secret`);
  return caught;
}

/** Established TCP connections of this machine to 127.0.0.1:`port` (the clients' sides). */
function connectionsTo(port: number): number {
  const hex = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  return readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((f) => f[2] === hex && f[3] === '01').length;
}

/** Private key material: the lines between the armour. */
function keyLines(key: string): string[] {
  return key.split('\n').filter((l) => l.length > 20 && !l.startsWith('-----'));
}

/**
 * The contract every store keeps (store.ts). `open` gives a store on a fresh, empty root;
 * `leftovers` lists what of a failed put is still on the far side, where the test can see it;
 * `plantPart` leaves there the part file of `key` that a put killed midway leaves (a store that
 * writes no part files has none).
 */
function storeContract(
  name: string,
  skip: string | false,
  open: () => BackupStore,
  leftovers?: () => string[],
  plantPart?: (key: string) => string,
) {
  describe(`the ${name} backup store`, { skip }, () => {
    let store: BackupStore;
    before(() => {
      store = open();
    });
    after(async () => {
      await store?.close();
    });

    test('probe: the store answers and takes writes', async () => {
      await store.probe();
      assert.deepEqual(await store.list('svc-probe/'), []);
    });

    test('a multi-megabyte stream goes in and comes back whole; size is what was stored', async () => {
      const stored = await store.put('svc-a/b1/data', generated('big', BIG));
      assert.equal(stored, BIG);
      assert.equal(await store.size('svc-a/b1/data'), BIG);
      assert.deepEqual(await digest(await store.get('svc-a/b1/data')), {
        sha256: sha256Of('big', BIG),
        bytes: BIG,
      });
    });

    test('a ranged get streams bytes start to end, both included', async () => {
      const start = 5 * MiB - 17;
      const end = 5 * MiB + 1000;
      sameBytes(
        await bytes(await store.get('svc-a/b1/data', { start, end })),
        pattern('big', start, end - start + 1),
      );
      // (Not 0-0: s3rver takes an end of 0 for "to the end"; the S3 store refuses such an answer.)
      sameBytes(await bytes(await store.get('svc-a/b1/data', { start: 0, end: 9 })), pattern('big', 0, 10));
      sameBytes(
        await bytes(await store.get('svc-a/b1/data', { start: BIG - 3, end: BIG - 1 })),
        pattern('big', BIG - 3, 3),
      );
    });

    test('a ranged get never hands back other bytes than those asked for', async () => {
      // s3rver reads a range ending at 0 as "to the end": the S3 store refuses that answer.
      try {
        sameBytes(await bytes(await store.get('svc-a/b1/data', { start: 0, end: 0 })), pattern('big', 0, 1));
      } catch (err) {
        if (!(err instanceof BackupStoreError)) throw err;
        assert.match(err.message, /asked for bytes 0-0/);
      }
    });

    test('list gives the keys under a prefix, nested ones included, and only those', async () => {
      await store.put('svc-a/b1/manifest', one('m1'));
      await store.put('svc-a/b2/data', one('d2'));
      await store.put('svc-ab/b3/data', one('d3'));
      await store.put('svc-b/b4/data', one('d4'));
      assert.deepEqual((await store.list('svc-a/')).sort(), [
        'svc-a/b1/data',
        'svc-a/b1/manifest',
        'svc-a/b2/data',
      ]);
      assert.deepEqual(await store.list('svc-a/b2/'), ['svc-a/b2/data']);
      assert.deepEqual(await store.list('svc-none/'), []);
    });

    test('a put replaces an object of the same key', async () => {
      await store.put('svc-b/b4/data', one('d4 again'));
      assert.equal(await text(await store.get('svc-b/b4/data')), 'd4 again');
      assert.equal(await store.size('svc-b/b4/data'), 'd4 again'.length);
    });

    test('delete removes the object; deleting a missing one is fine', async () => {
      await store.delete('svc-a/b2/data');
      assert.equal(await store.size('svc-a/b2/data'), undefined);
      assert.ok(!(await store.list('svc-a/')).includes('svc-a/b2/data'));
      await store.delete('svc-a/b2/data');
      await store.delete('svc-never/b9/data');
    });

    test('a get of a missing key is a permanent "missing" error; its size is undefined', async () => {
      assert.equal(await store.size('svc-never/b9/data'), undefined);
      await rejectsWith(store.get('svc-never/b9/data'), {
        transient: false,
        missing: true,
        names: store.description,
      });
    });

    test('a put whose source breaks midway leaves nothing, and an earlier object of that key intact', async () => {
      await rejectsWith(store.put('svc-c/b5/data', generated('broken', BIG, 7 * MiB)), {
        transient: true,
        missing: false,
        names: store.description,
        says: /the source broke/,
      });
      assert.equal(await store.size('svc-c/b5/data'), undefined);
      assert.deepEqual(await store.list('svc-c/'), []);

      await store.put('svc-c/b6/data', one('the earlier one'));
      await assert.rejects(store.put('svc-c/b6/data', generated('broken', BIG, 7 * MiB)));
      assert.equal(await text(await store.get('svc-c/b6/data')), 'the earlier one');
      assert.equal(await store.size('svc-c/b6/data'), 'the earlier one'.length);
      assert.deepEqual(await store.list('svc-c/'), ['svc-c/b6/data']);
      if (leftovers) assert.deepEqual(leftovers(), [], 'part files left on the far side');
    });

    test('list with parts also names the part file a killed put left, and delete removes it', async () => {
      await store.put('svc-k/b1/data', one('d1'));
      const part = plantPart?.('svc-k/b1/manifest');
      assert.deepEqual(await store.list('svc-k/'), ['svc-k/b1/data'], 'no part file without parts');
      assert.deepEqual(
        (await store.list('svc-k/', { parts: true })).sort(),
        ['svc-k/b1/data', ...(part ? [part] : [])].sort(),
      );
      for (const key of await store.list('svc-k/', { parts: true })) await store.delete(key);
      assert.deepEqual(await store.list('svc-k/', { parts: true }), []);
      if (leftovers) assert.deepEqual(leftovers(), [], 'part files left on the far side');
    });
  });
}

/** Leaves under `root` the part file of `key` a put killed midway leaves; its key as listed. */
function plantPartUnder(root: string, key: string): string {
  const part = `${key}.part-0123456789ab`;
  mkdirSync(join(root, ...key.split('/').slice(0, -1)), { recursive: true });
  writeFileSync(join(root, ...part.split('/')), 'half an obj');
  return part;
}

/** Files under `dir` whose names say they are parts of an unfinished put. */
function partsUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.includes('.part-'));
}

// Local: a directory of this machine.
const localRoot = mkdtempSync(join(tmpdir(), 'vrp-local-store-'));
after(() => rmSync(localRoot, { recursive: true, force: true }));
storeContract(
  'local',
  false,
  () => localBackupStore(join(localRoot, 'backups')),
  () => partsUnder(localRoot),
  (key) => plantPartUnder(join(localRoot, 'backups'), key),
);

// SFTP: OpenSSH's sshd, started here.
const noSshd = missingTool('sshd');
let sshd: Sshd | undefined;
before(async () => {
  if (!noSshd) sshd = await startSshd();
});
after(async () => {
  await sshd?.close();
});
function sftpStore(over: Partial<Parameters<typeof sftpBackupStore>[0]> = {}): BackupStore {
  if (!sshd) throw new Error('no sshd');
  return sftpBackupStore({
    host: sshd.host,
    port: sshd.port,
    username: sshd.username,
    path: join(sshd.dir, 'store', 'backups'),
    privateKey: sshd.clientKey,
    readyTimeoutMs: WAIT_MS,
    ...over,
  });
}
storeContract(
  'SFTP',
  noSshd,
  () => sftpStore(),
  () => (sshd ? partsUnder(join(sshd.dir, 'store')) : []),
  (key) => {
    if (!sshd) throw new Error('no sshd');
    return plantPartUnder(join(sshd.dir, 'store', 'backups'), key);
  },
);

// S3: s3rver, in this process.
let s3: S3Server | undefined;
before(async () => {
  s3 = await startS3();
});
after(async () => {
  await s3?.close();
});
function s3Store(over: Partial<Parameters<typeof s3BackupStore>[0]> = {}): BackupStore {
  if (!s3) throw new Error('no s3rver');
  return s3BackupStore({
    bucket: s3.bucket,
    prefix: 'vrp/test',
    endpoint: s3.endpoint,
    region: 'us-east-1',
    accessKeyId: s3.accessKeyId,
    secretAccessKey: s3.secretAccessKey,
    forcePathStyle: true,
    partBytes: 5 * MiB,
    requestTimeoutMs: WAIT_MS,
    ...over,
  });
}
storeContract('S3', false, () => s3Store());

/** A TCP server on loopback that takes connections and never says a word. */
async function silentServer(): Promise<{ port: number; close(): void }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    close() {
      server.close();
      for (const s of sockets) s.destroy();
    },
  };
}

describe('an SFTP store that cannot be used', { skip: noSshd }, () => {
  test('nothing listens on its port: a transient error naming the store, never the key', async () => {
    const port = await freePort();
    const store = sftpStore({ port });
    try {
      const err = await rejectsWith(store.probe(), {
        transient: true,
        missing: false,
        names: `sftp://${sshd?.username}@127.0.0.1:${port}/`,
        says: /connection refused/,
        secrets: keyLines(sshd?.clientKey ?? ''),
      });
      assert.equal(err.message.split('\n').length, 1);
      await rejectsWith(store.size('svc-a/b1/data'), {
        transient: true,
        missing: false,
        names: store.description,
      });
    } finally {
      await store.close();
    }
  });

  test('a key the server does not accept: a clear transient error, never the key', async () => {
    const store = sftpStore({ privateKey: sshd?.strangerKey ?? '' });
    try {
      await rejectsWith(store.probe(), {
        transient: true,
        missing: false,
        names: store.description,
        says: /did not accept the key for user .* \(authentication failed\)/,
        secrets: keyLines(sshd?.strangerKey ?? ''),
      });
    } finally {
      await store.close();
    }
  });

  test('a server that never answers: the connection attempt is bounded (readyTimeoutMs)', async () => {
    const silent = await silentServer();
    const store = sftpStore({ port: silent.port, readyTimeoutMs: 300 });
    try {
      await rejectsWith(store.probe(), {
        transient: true,
        missing: false,
        names: store.description,
        says: /no answer/,
      });
    } finally {
      await store.close();
      silent.close();
    }
  });

  test('a server that stops answering requests (its file system hangs, its SSH side alive): each request is bounded (requestTimeoutMs)', async () => {
    // Keepalives far apart: only the request's own bound can end the wait.
    const store = sftpStore({ requestTimeoutMs: 500, keepaliveMs: 10 * 60_000 });
    try {
      await store.put('svc-h/b1/data', one('kept'));
      const resume = sshd!.pauseConnections();
      try {
        // A put (never sent twice: its source is read once) fails, transient, saying why.
        await rejectsWith(store.put('svc-h/b2/data', one('new')), {
          transient: true,
          missing: false,
          names: store.description,
          says: /no answer to a request within 0\.5 s/,
          secrets: keyLines(sshd?.clientKey ?? ''),
        });
        // The connection that hung is given up: the next call goes over a new one.
        assert.equal(await store.size('svc-h/b1/data'), 4);
        assert.deepEqual(await store.list('svc-h/'), ['svc-h/b1/data']);
      } finally {
        resume();
      }
      // Closing the store while its server answers nothing ends (it does not wait for the server).
      const resumeAgain = sshd!.pauseConnections();
      try {
        await store.close();
      } finally {
        resumeAgain();
      }
    } finally {
      await store.close();
    }
  });

  test('a server that takes the key but has no SFTP: a transient error, and no connection left open', async () => {
    const bare = await startSshd({ sftp: false });
    const store = sftpBackupStore({
      host: bare.host,
      port: bare.port,
      username: bare.username,
      path: join(bare.dir, 'store'),
      privateKey: bare.clientKey,
      readyTimeoutMs: WAIT_MS,
    });
    try {
      for (let i = 0; i < 3; i++) {
        await rejectsWith(store.probe(), {
          transient: true,
          missing: false,
          names: store.description,
          secrets: keyLines(bare.clientKey),
        });
      }
      await waitUntil('the connections to the server to be closed', () =>
        connectionsTo(bare.port) === 0 ? true : undefined,
      );
    } finally {
      await store.close();
      await bare.close();
    }
  });

  test('a dropped connection is opened again; a stopped server is a transient error until it is back', async () => {
    const store = sftpStore();
    try {
      await store.put('svc-r/b1/data', one('kept'));
      sshd?.dropConnections();
      assert.equal(await store.size('svc-r/b1/data'), 4);
      assert.deepEqual(await store.list('svc-r/'), ['svc-r/b1/data']);

      await sshd?.stop();
      await rejectsWith(store.size('svc-r/b1/data'), {
        transient: true,
        missing: false,
        names: store.description,
        secrets: keyLines(sshd?.clientKey ?? ''),
      });
      await sshd?.start();
      assert.equal(await text(await store.get('svc-r/b1/data')), 'kept');
    } finally {
      await store.close();
    }
  });
});

describe('an SFTP store with a pinned host key (VRP_BACKUP_SFTP_HOST_KEY)', { skip: noSshd }, () => {
  /** The store the settings make, as the service makes it, pinned to `hostKey`. */
  function pinnedStore(hostKey: string): Promise<BackupStore> {
    if (!sshd) throw new Error('no sshd');
    const { backupStore } = loadConfig({
      VRP_BACKUP_STORE: `sftp://${sshd.username}@${sshd.host}:${sshd.port}${join(sshd.dir, 'store', 'pinned')}`,
      VRP_BACKUP_SFTP_KEY_FILE: sshd.clientKeyFile,
      VRP_BACKUP_SFTP_HOST_KEY: hostKey,
    });
    return createBackupStore(backupStore);
  }

  test("the server's own key, as a public key line or as its fingerprint: the store works", async () => {
    for (const pin of [sshd?.hostPublicKey ?? '', sshd?.hostKeyFingerprint ?? '']) {
      const store = await pinnedStore(pin);
      try {
        await store.probe();
        await store.put('svc-p/b1/data', one('pinned'));
        assert.equal(await text(await store.get('svc-p/b1/data')), 'pinned');
      } finally {
        await store.close();
      }
    }
  });

  test('a public key line of a type the client asks for second (ECDSA): only that type is asked for', async () => {
    const store = await pinnedStore(sshd?.hostEcdsaPublicKey ?? '');
    try {
      await store.probe();
    } finally {
      await store.close();
    }
  });

  test('another key, in either form: refused with a transient error naming the key offered, never the client key', async () => {
    for (const pin of [sshd?.strangerPublicKey ?? '', sshd?.strangerFingerprint ?? '']) {
      const store = await pinnedStore(pin);
      try {
        const err = await rejectsWith(store.probe(), {
          transient: true,
          missing: false,
          names: store.description,
          says: /cannot connect: the server's host key SHA256:\S+ does not match the pinned one/,
          secrets: keyLines(sshd?.clientKey ?? ''),
        });
        assert.ok(
          err.message.includes(`host key ${sshd?.hostKeyFingerprint} does not match`),
          `"${err.message}" should name the fingerprint the server offered`,
        );
        assert.equal(err.message.split('\n').length, 1);
        // Every call is refused the same way, not only the first.
        await rejectsWith(store.size('svc-p/b1/data'), {
          transient: true,
          missing: false,
          names: store.description,
          says: /does not match the pinned one/,
        });
      } finally {
        await store.close();
      }
    }
  });
});

describe('an S3 store that cannot be used', () => {
  const secret = 'never-shown-secret-0123456789';

  test('nothing listens at its endpoint: a transient error naming the store, never the secret', async () => {
    const port = await freePort();
    const store = s3Store({ endpoint: `http://127.0.0.1:${port}`, secretAccessKey: secret, maxAttempts: 1 });
    try {
      const err = await rejectsWith(store.probe(), {
        transient: true,
        missing: false,
        names: `s3://${s3?.bucket}/vrp/test at http://127.0.0.1:${port}`,
        says: /connection refused/,
        secrets: [secret],
      });
      assert.equal(err.message.split('\n').length, 1);
      await rejectsWith(store.put('svc-a/b1/data', one('x')), {
        transient: true,
        missing: false,
        names: store.description,
        secrets: [secret],
      });
    } finally {
      await store.close();
    }
  });

  test('credentials the service refuses: a clear transient error, never the secret', async () => {
    const store = s3Store({ accessKeyId: 'NOT-A-KEY', secretAccessKey: secret, maxAttempts: 1 });
    try {
      await rejectsWith(store.put('svc-a/b1/data', one('x')), {
        transient: true,
        missing: false,
        names: store.description,
        says: /did not accept the access key/,
        secrets: [secret],
      });
    } finally {
      await store.close();
    }
  });

  test('a bucket that is not there: probe says so', async () => {
    const store = s3Store({ bucket: 'no-such-bucket', maxAttempts: 1 });
    try {
      await rejectsWith(store.probe(), {
        transient: true,
        missing: false,
        names: 's3://no-such-bucket/',
        says: /no bucket no-such-bucket/,
      });
    } finally {
      await store.close();
    }
  });

  test('an endpoint that never answers: each request is bounded (requestTimeoutMs)', async () => {
    const silent = await silentServer();
    const store = s3Store({
      endpoint: `http://127.0.0.1:${silent.port}`,
      requestTimeoutMs: 300,
      maxAttempts: 1,
    });
    try {
      await rejectsWith(store.probe(), {
        transient: true,
        missing: false,
        names: store.description,
        says: /no answer/,
      });
    } finally {
      await store.close();
      silent.close();
    }
  });
});

test('the settings make the store they name: VRP_BACKUP_STORE of each kind, through createBackupStore', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'vrp-store-kinds-'));
  try {
    const local = await createBackupStore(loadConfig({ VRP_DATA_DIR: dir }).backupStore);
    assert.equal(local.description, `local:${join(dir, 'backups')}`);
    await local.put('svc-k/b1/data', one('local'));
    assert.equal(await text(await local.get('svc-k/b1/data')), 'local');
    assert.ok(s3, 's3rver runs');
    {
      const { backupStore } = loadConfig({
        VRP_DATA_DIR: dir,
        VRP_BACKUP_STORE: `s3://${s3.bucket}/kinds`,
        VRP_BACKUP_S3_ENDPOINT: s3.endpoint,
        VRP_BACKUP_S3_ACCESS_KEY_ID: s3.accessKeyId,
        VRP_BACKUP_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
      });
      const bucket = await createBackupStore(backupStore);
      try {
        assert.equal(bucket.description, `s3://${s3.bucket}/kinds at ${s3.endpoint}`);
        await bucket.put('svc-k/b1/data', one('s3'));
        assert.equal(await text(await bucket.get('svc-k/b1/data')), 's3');
        assert.deepEqual(await bucket.list('svc-k/'), ['svc-k/b1/data']);
      } finally {
        await bucket.close();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

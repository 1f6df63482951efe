import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.ts';

const HEX_KEY = 'a'.repeat(64);
const B64_KEY = Buffer.alloc(32, 7).toString('base64');

/** Asserts that `env` is refused with a ConfigError whose message names `setting`. */
function refuses(env: Record<string, string>, setting: string): void {
  assert.throws(
    () => loadConfig(env),
    (err: unknown) => {
      assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
      assert.equal(err.name, 'ConfigError');
      assert.ok(err.message.includes(setting), `"${err.message}" should name ${setting}`);
      return true;
    },
    `${JSON.stringify(env)} should be refused`,
  );
}

describe('loadConfig', () => {
  test('defaults with an empty environment', () => {
    const c = loadConfig({});
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.port, 8080);
    assert.equal(c.dataDir, resolve('./data'));
    assert.equal(c.databaseUrl, undefined);
    assert.equal(c.databasePoolSize, 10);
    assert.equal(c.driver, 'simulated');
    assert.equal(c.libvirtUri, 'qemu:///system');
    assert.equal(c.tokenTtl, 3600);
    assert.equal(c.logLevel, 'info');
    assert.equal(c.demo, true);
    assert.equal(c.simulatedSpeed, 1);
    // Documented as "two hosts"; their sizes are the simulator's business.
    assert.deepEqual(
      c.simulatedHosts.map((h) => h.id),
      ['sim-host-1', 'sim-host-2'],
    );
    for (const h of c.simulatedHosts) {
      for (const n of [h.cpu, h.ramGb, h.diskGb, h.backupGb]) assert.ok(Number.isInteger(n) && n > 0);
    }
    assert.equal(c.simulatedIpPool, '10.80.0.0/16');
    assert.deepEqual(c.simulatedFaults, { transient: 0, permanent: 0 });
    assert.equal(c.secretKey, undefined);
    assert.equal(c.baseUrl, undefined);
    assert.equal(c.workerMode, 'both');
    assert.equal(c.workerConcurrency, 16);
    assert.equal(c.workerPollMs, 500);
    assert.equal(c.jobLeaseMs, 30_000);
    assert.equal(c.jobRetryBaseMs, 2000);
    assert.equal(c.jobMaxAttempts, 6);
    assert.equal(c.stopTimeoutMs, 120_000);
    assert.equal(c.rateLimit, 50);
    assert.equal(c.rateBurst, 100);
    assert.equal(c.schedulerGraceMs, 6 * 3_600_000);
    assert.equal(c.schedulerIntervalMs, 15_000);
    assert.equal(c.clockStart, undefined);
    assert.equal(c.clockRate, 1);
  });

  test('reads every VRP_* setting', () => {
    const c = loadConfig({
      VRP_HOST: '0.0.0.0',
      VRP_PORT: '9090',
      VRP_DATA_DIR: '/tmp/vrp-config-test',
      VRP_DATABASE_URL: 'postgres://vrp:pw@db.example:5432/vrp',
      VRP_DATABASE_POOL: '25',
      VRP_DRIVER: 'libvirt',
      VRP_LIBVIRT_URI: 'qemu+ssh://root@hv1/system',
      VRP_TOKEN_TTL: '600',
      VRP_LOG_LEVEL: 'debug',
      VRP_DEMO: '0',
      VRP_SIMULATED_SPEED: '0.5',
      VRP_SIM_HOSTS: 'h1:8:32:500:100, h2:16:64:1000',
      VRP_SIM_IP_POOL: '192.168.10.0/24',
      VRP_SIM_FAULTS: 'transient=0.1,permanent=0.01',
      VRP_SECRET_KEY: HEX_KEY,
      VRP_BASE_URL: 'https://api.example.com/vps_reseller_provider/public/',
      VRP_ROLE: 'worker',
      VRP_WORKER_CONCURRENCY: '4',
      VRP_WORKER_POLL: '2s',
      VRP_JOB_LEASE: '45s',
      VRP_JOB_RETRY_BASE: '500ms',
      VRP_JOB_MAX_ATTEMPTS: '3',
      VRP_STOP_TIMEOUT: '90s',
      VRP_TEMPLATE_SWEEP_GRACE: '1d',
      VRP_COPY_STALL: '90s',
      VRP_COPY_MIN_RATE: '50',
      VRP_RATE_LIMIT: '7',
      VRP_RATE_BURST: '9',
      VRP_SCHEDULER_GRACE: '1h',
      VRP_SCHEDULER_INTERVAL: '30',
      VRP_CLOCK_START: '2030-01-01T00:00:00Z',
      VRP_CLOCK_RATE: '60',
    });
    assert.equal(c.host, '0.0.0.0');
    assert.equal(c.port, 9090);
    assert.equal(c.dataDir, '/tmp/vrp-config-test');
    assert.equal(c.databaseUrl, 'postgres://vrp:pw@db.example:5432/vrp');
    assert.equal(c.databasePoolSize, 25);
    assert.equal(c.driver, 'libvirt');
    assert.equal(c.libvirtUri, 'qemu+ssh://root@hv1/system');
    assert.equal(c.tokenTtl, 600);
    assert.equal(c.logLevel, 'debug');
    assert.equal(c.demo, false);
    assert.equal(c.simulatedSpeed, 0.5);
    assert.deepEqual(c.simulatedHosts, [
      { id: 'h1', cpu: 8, ramGb: 32, diskGb: 500, backupGb: 100 },
      { id: 'h2', cpu: 16, ramGb: 64, diskGb: 1000, backupGb: 0 },
    ]);
    assert.equal(c.simulatedIpPool, '192.168.10.0/24');
    assert.deepEqual(c.simulatedFaults, { transient: 0.1, permanent: 0.01 });
    assert.equal(c.secretKey, HEX_KEY);
    assert.equal(c.baseUrl, 'https://api.example.com/vps_reseller_provider/public', 'trailing slash dropped');
    assert.equal(c.workerMode, 'worker');
    assert.equal(c.workerConcurrency, 4);
    assert.equal(c.workerPollMs, 2000);
    assert.equal(c.jobLeaseMs, 45_000);
    assert.equal(c.jobRetryBaseMs, 500);
    assert.equal(c.jobMaxAttempts, 3);
    assert.equal(c.stopTimeoutMs, 90_000);
    assert.equal(c.templateSweepGraceMs, 86_400_000);
    assert.deepEqual(c.copyPace, { stallMs: 90_000, minBytesPerSecond: 50 * 1024 * 1024 });
    assert.equal(c.rateLimit, 7);
    assert.equal(c.rateBurst, 9);
    assert.equal(c.schedulerGraceMs, 3_600_000);
    assert.equal(c.schedulerIntervalMs, 30_000, 'a bare number is seconds');
    assert.equal(c.clockStart, Date.UTC(2030, 0, 1));
    assert.equal(c.clockRate, 60);
  });

  test('other accepted spellings', () => {
    assert.equal(
      loadConfig({ VRP_DATABASE_URL: 'postgresql://localhost/vrp' }).databaseUrl,
      'postgresql://localhost/vrp',
    );
    assert.equal(loadConfig({ VRP_SECRET_KEY: B64_KEY }).secretKey, B64_KEY);
    for (const yes of ['1', 'true', 'yes', 'on', 'TRUE'])
      assert.equal(loadConfig({ VRP_DEMO: yes }).demo, true);
    for (const no of ['0', 'false', 'no', 'off']) assert.equal(loadConfig({ VRP_DEMO: no }).demo, false);
    assert.equal(loadConfig({ VRP_RATE_LIMIT: '0' }).rateLimit, 0, '0 turns rate limiting off');
    assert.equal(loadConfig({ VRP_SIMULATED_SPEED: '0' }).simulatedSpeed, 0);
    assert.equal(loadConfig({ VRP_PORT: '0' }).port, 0);
    assert.equal(loadConfig({ VRP_ROLE: 'api' }).workerMode, 'api');
    assert.equal(loadConfig({ VRP_JOB_LEASE: '1.5m' }).jobLeaseMs, 90_000);
    assert.deepEqual(loadConfig({ VRP_SIM_TRAFFIC_RATE: '1000' }).simulatedTrafficRate, {
      inPerSecond: 1000,
      outPerSecond: 1000,
    });
    assert.deepEqual(loadConfig({ VRP_SIM_TRAFFIC_RATE: '1000,250' }).simulatedTrafficRate, {
      inPerSecond: 1000,
      outPerSecond: 250,
    });
    assert.equal(loadConfig({}).trafficSampleIntervalMs, 300_000, 'every 5 minutes by default');
    assert.equal(
      loadConfig({ VRP_TRAFFIC_SAMPLE_INTERVAL: '0' }).trafficSampleIntervalMs,
      0,
      '0 turns it off',
    );
    assert.equal(loadConfig({ VRP_DATA_DIR: 'rel/dir' }).dataDir, resolve('rel/dir'), 'made absolute');
  });

  test('an empty value means the default, for every setting', () => {
    const defaults = loadConfig({});
    const names = [
      'VRP_HOST',
      'VRP_PORT',
      'VRP_DATA_DIR',
      'VRP_DATABASE_URL',
      'VRP_DATABASE_POOL',
      'VRP_DRIVER',
      'VRP_LIBVIRT_URI',
      'VRP_TOKEN_TTL',
      'VRP_LOG_LEVEL',
      'VRP_DEMO',
      'VRP_SIMULATED_SPEED',
      'VRP_SIM_HOSTS',
      'VRP_SIM_IP_POOL',
      'VRP_SIM_FAULTS',
      'VRP_SECRET_KEY',
      'VRP_BASE_URL',
      'VRP_CORS_ORIGINS',
      'VRP_TRUST_PROXY',
      'VRP_ROLE',
      'VRP_WORKER_CONCURRENCY',
      'VRP_WORKER_POLL',
      'VRP_JOB_LEASE',
      'VRP_JOB_RETRY_BASE',
      'VRP_JOB_MAX_ATTEMPTS',
      'VRP_STOP_TIMEOUT',
      'VRP_TEMPLATE_SWEEP_GRACE',
      'VRP_COPY_STALL',
      'VRP_COPY_MIN_RATE',
      'VRP_RATE_LIMIT',
      'VRP_RATE_BURST',
      'VRP_SCHEDULER_GRACE',
      'VRP_SCHEDULER_INTERVAL',
      'VRP_CLOCK_START',
      'VRP_CLOCK_RATE',
      'VRP_WEBHOOK_RETRY_SCHEDULE',
      'VRP_BACKUP_STORE',
    ];
    // `VRP_X=` in an env file or a compose file is common; every other setting reads it as unset.
    const refused: string[] = [];
    for (const name of names) {
      try {
        assert.deepEqual(loadConfig({ [name]: '' }), defaults, `${name}= (empty)`);
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        refused.push(name);
      }
    }
    assert.deepEqual(refused, [], 'settings that refuse an empty value instead of using the default');
  });

  test('bad values are refused with a ConfigError naming the setting', () => {
    const cases: [string, string][] = [
      ['VRP_PORT', 'abc'],
      ['VRP_PORT', '70000'],
      ['VRP_PORT', '-1'],
      ['VRP_PORT', '80.5'],
      ['VRP_DRIVER', 'xen'],
      ['VRP_SIMULATED_SPEED', '-1'],
      ['VRP_SIMULATED_SPEED', 'fast'],
      ['VRP_DATABASE_URL', 'mysql://x'],
      ['VRP_DATABASE_URL', 'not a url'],
      ['VRP_DATABASE_POOL', '0'],
      ['VRP_SECRET_KEY', 'short'],
      ['VRP_SECRET_KEY', 'a'.repeat(63)],
      ['VRP_SIM_HOSTS', 'bad'],
      ['VRP_SIM_HOSTS', 'h1:8:32'],
      ['VRP_SIM_HOSTS', 'h1:8:32:x'],
      ['VRP_SIM_HOSTS', 'h1:8:32:500,h1:8:32:500'],
      ['VRP_SIM_IP_POOL', '10.0.0.0'],
      ['VRP_SIM_IP_POOL', '300.0.0.0/16'],
      ['VRP_SIM_IP_POOL', '10.0.0.0/31'],
      ['VRP_SIM_FAULTS', 'x=1'],
      ['VRP_SIM_FAULTS', 'transient=2'],
      ['VRP_SIM_FAULTS', 'transient='],
      ['VRP_SIM_FAULTS', 'permanent'],
      ['VRP_TOKEN_TTL', '5'],
      ['VRP_TOKEN_TTL', '1h'],
      ['VRP_LOG_LEVEL', 'verbose'],
      ['VRP_DEMO', 'maybe'],
      ['VRP_BASE_URL', 'ftp://example.com'],
      ['VRP_ROLE', 'scheduler'],
      ['VRP_WORKER_CONCURRENCY', '0'],
      ['VRP_WORKER_POLL', '5ms'],
      ['VRP_WORKER_POLL', 'often'],
      ['VRP_JOB_LEASE', '10x'],
      ['VRP_JOB_LEASE', '500ms'],
      ['VRP_JOB_MAX_ATTEMPTS', '0'],
      ['VRP_STOP_TIMEOUT', '-5s'],
      // Shorter than an upload or a migration may take to name its copy (template-sweep.ts).
      ['VRP_TEMPLATE_SWEEP_GRACE', '13h'],
      ['VRP_TEMPLATE_SWEEP_GRACE', 'soon'],
      ['VRP_COPY_STALL', '500ms'],
      ['VRP_COPY_STALL', 'never'],
      ['VRP_COPY_MIN_RATE', '0'],
      ['VRP_COPY_MIN_RATE', '2.5'],
      ['VRP_RATE_LIMIT', '-1'],
      ['VRP_RATE_BURST', '0'],
      ['VRP_SCHEDULER_INTERVAL', '5ms'],
      ['VRP_CLOCK_START', 'yesterday'],
      ['VRP_CLOCK_RATE', '0'],
      ['VRP_SIM_TRAFFIC_RATE', 'fast'],
      ['VRP_SIM_TRAFFIC_RATE', '1,2,3'],
      ['VRP_SIM_TRAFFIC_RATE', '-5'],
      ['VRP_SIM_TRAFFIC_RATE', '20000000000'],
      ['VRP_TRAFFIC_SAMPLE_INTERVAL', 'often'],
    ];
    for (const [name, value] of cases) refuses({ [name]: value }, name);
  });

  test('the result is frozen', () => {
    const c = loadConfig({});
    assert.ok(Object.isFrozen(c));
    assert.throws(() => {
      (c as { port: number }).port = 1;
    }, TypeError);
    assert.equal(c.port, 8080);
  });

  test('reads process.env when no environment is given', () => {
    const saved = process.env['VRP_PORT'];
    process.env['VRP_PORT'] = '8181';
    try {
      assert.equal(loadConfig().port, 8181);
    } finally {
      if (saved === undefined) delete process.env['VRP_PORT'];
      else process.env['VRP_PORT'] = saved;
    }
  });
});

describe('VRP_AUDIT_RETENTION', () => {
  test('a year by default, any duration of at least a day, else refused naming the setting', () => {
    const DAY = 86_400_000;
    assert.equal(loadConfig({}).auditRetentionMs, 365 * DAY);
    assert.equal(loadConfig({ VRP_AUDIT_RETENTION: '' }).auditRetentionMs, 365 * DAY);
    assert.equal(loadConfig({ VRP_AUDIT_RETENTION: '30d' }).auditRetentionMs, 30 * DAY);
    assert.equal(loadConfig({ VRP_AUDIT_RETENTION: '24h' }).auditRetentionMs, DAY);
    for (const bad of ['12h', '0', 'forever', '-1d'])
      refuses({ VRP_AUDIT_RETENTION: bad }, 'VRP_AUDIT_RETENTION');
  });
});

describe('VRP_TRUST_PROXY', () => {
  test('none by default; addresses and CIDR ranges, comma-separated; anything else refused naming the setting', () => {
    assert.deepEqual(loadConfig({}).trustProxy, []);
    assert.deepEqual(loadConfig({ VRP_TRUST_PROXY: '127.0.0.1, 10.0.0.0/8,::1,fd00::/8' }).trustProxy, [
      '127.0.0.1',
      '10.0.0.0/8',
      '::1',
      'fd00::/8',
    ]);
    for (const bad of [
      'proxy.example.com',
      '10.0.0.0/33',
      '::1/129',
      '10.0.0.0/8/1',
      '10.0.0.0/',
      '127.0.0.1,',
      'loopback',
    ]) {
      assert.throws(() => loadConfig({ VRP_TRUST_PROXY: bad }), /VRP_TRUST_PROXY must be/, bad);
    }
  });
});

describe('VRP_CORS_ORIGINS', () => {
  test('off by default; exact origins, comma-separated; anything else refused naming the setting', () => {
    assert.deepEqual(loadConfig({}).corsOrigins, []);
    assert.deepEqual(loadConfig({ VRP_CORS_ORIGINS: '' }).corsOrigins, []);
    assert.deepEqual(
      loadConfig({ VRP_CORS_ORIGINS: 'https://panel.example.com, http://127.0.0.1:5173' }).corsOrigins,
      ['https://panel.example.com', 'http://127.0.0.1:5173'],
    );
    for (const bad of [
      '*',
      'null',
      'panel.example.com',
      'https://panel.example.com/',
      'https://panel.example.com/app',
      'https://Panel.example.com',
      'https://panel.example.com:443',
      'https://*.example.com',
      'ftp://panel.example.com',
      'https://panel.example.com,',
    ]) {
      refuses({ VRP_CORS_ORIGINS: bad }, 'VRP_CORS_ORIGINS');
    }
    assert.throws(
      () => loadConfig({ VRP_CORS_ORIGINS: 'https://panel.example.com/' }),
      /did you mean https:\/\/panel\.example\.com\?/,
    );
  });
});

describe('VRP_BACKUP_STORE and the settings of its store', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vrp-config-store-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const keyText =
    '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA-not-a-real-key\n-----END OPENSSH PRIVATE KEY-----\n';
  const keyFile = join(dir, 'id_ed25519');
  writeFileSync(keyFile, keyText, { mode: 0o600 });
  const notKey = join(dir, 'notes.txt');
  writeFileSync(notKey, 'hello\n');
  const S3 = {
    VRP_BACKUP_S3_ACCESS_KEY_ID: 'AKIDEXAMPLE',
    VRP_BACKUP_S3_SECRET_ACCESS_KEY: 'secret-never-shown',
  };

  /** Refused on one line naming `setting`, and showing none of `secrets`. */
  function refusedOnce(env: Record<string, string>, setting: string, secrets: string[] = []): void {
    refuses(env, setting);
    try {
      loadConfig(env);
    } catch (err) {
      assert.ok(err instanceof ConfigError);
      assert.equal(err.message.split('\n').length, 1, err.message);
      for (const secret of secrets)
        assert.ok(!err.message.includes(secret), `"${err.message}" shows a secret`);
    }
  }

  test('by default the directory backups in the data directory', () => {
    assert.deepEqual(loadConfig({ VRP_DATA_DIR: '/srv/vrp' }).backupStore, {
      kind: 'local',
      path: '/srv/vrp/backups',
    });
    assert.deepEqual(loadConfig({ VRP_BACKUP_STORE: 'local:/mnt/backups/' }).backupStore, {
      kind: 'local',
      path: '/mnt/backups',
    });
    assert.ok(Object.isFrozen(loadConfig({}).backupStore));
    refusedOnce({ VRP_BACKUP_STORE: 'local:backups' }, 'VRP_BACKUP_STORE');
    refusedOnce({ VRP_BACKUP_STORE: '/mnt/backups' }, 'VRP_BACKUP_STORE');
    refusedOnce({ VRP_BACKUP_STORE: 'ftp://u@h/x' }, 'VRP_BACKUP_STORE');
  });

  test('sftp://user@host[:port]/path with the key of VRP_BACKUP_SFTP_KEY_FILE, read at start', () => {
    assert.deepEqual(
      loadConfig({
        VRP_BACKUP_STORE: 'sftp://backup@store.example.com/srv/vrp/',
        VRP_BACKUP_SFTP_KEY_FILE: keyFile,
      }).backupStore,
      {
        kind: 'sftp',
        host: 'store.example.com',
        port: 22,
        username: 'backup',
        path: '/srv/vrp',
        keyFile,
        privateKey: keyText,
        hostKey: undefined,
      },
    );
    const v6 = loadConfig({
      VRP_BACKUP_STORE: 'sftp://b@[::1]:2222/b',
      VRP_BACKUP_SFTP_KEY_FILE: keyFile,
    }).backupStore;
    assert.ok(v6.kind === 'sftp');
    assert.equal(v6.host, '::1');
    assert.equal(v6.port, 2222);
    assert.equal(v6.path, '/b');

    const store = 'sftp://backup@store.example.com/srv/vrp';
    refusedOnce({ VRP_BACKUP_STORE: store }, 'VRP_BACKUP_SFTP_KEY_FILE');
    refusedOnce(
      { VRP_BACKUP_STORE: store, VRP_BACKUP_SFTP_KEY_FILE: join(dir, 'missing') },
      'VRP_BACKUP_SFTP_KEY_FILE',
    );
    refusedOnce({ VRP_BACKUP_STORE: store, VRP_BACKUP_SFTP_KEY_FILE: dir }, 'VRP_BACKUP_SFTP_KEY_FILE');
    refusedOnce({ VRP_BACKUP_STORE: store, VRP_BACKUP_SFTP_KEY_FILE: notKey }, 'VRP_BACKUP_SFTP_KEY_FILE');
    for (const bad of [
      'sftp://store.example.com/srv/vrp',
      'sftp://backup@store.example.com',
      'sftp://backup@/srv/vrp',
      'sftp://backup@store.example.com:0/srv',
      'sftp://backup@store.example.com:99999/srv',
      'sftp://backup@store.example.com/srv?x=1',
      'sftp:backup@store.example.com/srv',
    ])
      refusedOnce({ VRP_BACKUP_STORE: bad, VRP_BACKUP_SFTP_KEY_FILE: keyFile }, 'VRP_BACKUP_STORE');
    // A password written into the URL is refused, and not repeated.
    for (const bad of [
      'sftp://backup:hunter2-pw@store.example.com/srv',
      'sftp://backup:hunter2-pw@store example/srv',
    ])
      refusedOnce({ VRP_BACKUP_STORE: bad, VRP_BACKUP_SFTP_KEY_FILE: keyFile }, 'VRP_BACKUP_STORE', [
        'hunter2-pw',
      ]);
  });

  test('VRP_BACKUP_SFTP_HOST_KEY pins the server: a public key line or a SHA256 fingerprint', () => {
    // Keys made by ssh-keygen, and the fingerprints `ssh-keygen -lf` printed for them.
    const blob = 'AAAAC3NzaC1lZDI1NTE5AAAAIMlIPNX7AEzPonOcyC+WDKJ9KY/MjE8hbVMgHkz8iz8q';
    const fingerprint = 'SHA256:A7zWhFGWqbWW9VLmB0wok78qzKocvk8De3dIBIROLQk';
    const ecdsa =
      'AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBDvVxF+DXS63SGfz79njrE3nP/klc9Ww383g9K3duwYC7Cn5oxzWImUB9+sPNbwrLTTqZZUqc9QLGgPjzNHiQ5w=';
    const store = 'sftp://backup@store.example.com/srv/vrp';
    const pinned = (hostKey: string) =>
      loadConfig({
        VRP_BACKUP_STORE: store,
        VRP_BACKUP_SFTP_KEY_FILE: keyFile,
        VRP_BACKUP_SFTP_HOST_KEY: hostKey,
      }).backupStore;
    const fromLine = { fingerprint, type: 'ssh-ed25519' };
    assert.deepEqual(pinned(`ssh-ed25519 ${blob} root@store`), { ...pinned(''), hostKey: fromLine });
    assert.deepEqual(pinned(`ssh-ed25519 ${blob}`), { ...pinned(''), hostKey: fromLine });
    // As ssh-keyscan prints it: the host name first.
    assert.deepEqual(pinned(`store.example.com ssh-ed25519 ${blob}`), { ...pinned(''), hostKey: fromLine });
    assert.deepEqual(pinned(` ${fingerprint}\n`), {
      ...pinned(''),
      hostKey: { fingerprint, type: undefined },
    });
    assert.deepEqual(pinned(`ecdsa-sha2-nistp256 ${ecdsa} x`), {
      ...pinned(''),
      hostKey: {
        fingerprint: 'SHA256:ZJlDjoWjRlFjQPjLYyR/QxDt3qBrKzRCfzp/SMJOS1U',
        type: 'ecdsa-sha2-nistp256',
      },
    });
    const unset = pinned('');
    assert.ok(unset.kind === 'sftp');
    assert.equal(unset.hostKey, undefined);

    for (const bad of [
      'yes',
      blob,
      `ssh-dss ${blob}`,
      `ssh-ed25519`,
      `ssh-ed25519 ${blob.slice(0, -4)}`,
      `ssh-ed25519 ${blob}!`,
      `ssh-rsa ${blob}`, // the blob says ssh-ed25519
      `ecdsa-sha2-nistp256 ${Buffer.from('not a key').toString('base64')}`,
      'SHA256:tooshort',
      'MD5:16:27:ac:a5:76:28:2d:36:63:1b:56:4d:eb:df:a6:48',
      `${fingerprint}x`,
    ])
      refusedOnce(
        { VRP_BACKUP_STORE: store, VRP_BACKUP_SFTP_KEY_FILE: keyFile, VRP_BACKUP_SFTP_HOST_KEY: bad },
        'VRP_BACKUP_SFTP_HOST_KEY',
      );
  });

  test('s3://bucket[/prefix] with the VRP_BACKUP_S3_* settings', () => {
    assert.deepEqual(loadConfig({ VRP_BACKUP_STORE: 's3://vrp-backups', ...S3 }).backupStore, {
      kind: 's3',
      bucket: 'vrp-backups',
      prefix: '',
      endpoint: undefined,
      region: 'us-east-1',
      accessKeyId: 'AKIDEXAMPLE',
      secretAccessKey: 'secret-never-shown',
      forcePathStyle: false,
    });
    const minio = loadConfig({
      VRP_BACKUP_STORE: 's3://vrp-backups/prod/eu-1/',
      VRP_BACKUP_S3_ENDPOINT: 'https://minio.example.com:9000/',
      VRP_BACKUP_S3_REGION: 'eu-west-1',
      ...S3,
    }).backupStore;
    assert.ok(minio.kind === 's3');
    assert.equal(minio.prefix, 'prod/eu-1');
    assert.equal(minio.endpoint, 'https://minio.example.com:9000');
    assert.equal(minio.region, 'eu-west-1');
    assert.equal(minio.forcePathStyle, true, 'path-style by default with an endpoint');
    const vhost = loadConfig({
      VRP_BACKUP_STORE: 's3://vrp-backups',
      VRP_BACKUP_S3_ENDPOINT: 'https://s3.example.com',
      VRP_BACKUP_S3_PATH_STYLE: '0',
      ...S3,
    }).backupStore;
    assert.ok(vhost.kind === 's3' && !vhost.forcePathStyle);

    const secrets = [S3.VRP_BACKUP_S3_SECRET_ACCESS_KEY];
    for (const bad of [
      's3://',
      's3://Vrp_Backups',
      's3://ab',
      's3:vrp-backups',
      's3://vrp-backups/a/../b',
      's3://vrp-backups/a b',
    ])
      refusedOnce({ VRP_BACKUP_STORE: bad, ...S3 }, 'VRP_BACKUP_STORE', secrets);
    const s3 = { VRP_BACKUP_STORE: 's3://vrp-backups', ...S3 };
    refusedOnce({ ...s3, VRP_BACKUP_S3_ENDPOINT: 'minio:9000' }, 'VRP_BACKUP_S3_ENDPOINT', secrets);
    refusedOnce(
      { ...s3, VRP_BACKUP_S3_ENDPOINT: 'ftp://minio.example.com' },
      'VRP_BACKUP_S3_ENDPOINT',
      secrets,
    );
    refusedOnce(
      { ...s3, VRP_BACKUP_S3_ENDPOINT: 'https://key:pw-in-url@minio.example.com' },
      'VRP_BACKUP_S3_ENDPOINT',
      ['pw-in-url'],
    );
    refusedOnce({ ...s3, VRP_BACKUP_S3_REGION: 'EU West' }, 'VRP_BACKUP_S3_REGION', secrets);
    refusedOnce({ ...s3, VRP_BACKUP_S3_PATH_STYLE: 'maybe' }, 'VRP_BACKUP_S3_PATH_STYLE', secrets);
    refusedOnce({ ...s3, VRP_BACKUP_S3_ACCESS_KEY_ID: '' }, 'VRP_BACKUP_S3_ACCESS_KEY_ID', secrets);
    refusedOnce({ ...s3, VRP_BACKUP_S3_ACCESS_KEY_ID: 'two words' }, 'VRP_BACKUP_S3_ACCESS_KEY_ID', secrets);
    refusedOnce({ ...s3, VRP_BACKUP_S3_SECRET_ACCESS_KEY: '' }, 'VRP_BACKUP_S3_SECRET_ACCESS_KEY');
    refusedOnce(
      { ...s3, VRP_BACKUP_S3_SECRET_ACCESS_KEY: 'has a space' },
      'VRP_BACKUP_S3_SECRET_ACCESS_KEY',
      ['has a space'],
    );
  });
});

describe('VRP_WEBHOOK_RETRY_SCHEDULE', () => {
  test('the Standard Webhooks schedule by default; a list of durations; else refused on one line naming the setting', () => {
    const M = 60_000;
    const H = 3_600_000;
    assert.deepEqual(loadConfig({}).webhookRetrySchedule, [
      5000,
      5 * M,
      30 * M,
      2 * H,
      5 * H,
      10 * H,
      10 * H,
    ]);
    assert.deepEqual(
      loadConfig({ VRP_WEBHOOK_RETRY_SCHEDULE: '' }).webhookRetrySchedule,
      loadConfig({}).webhookRetrySchedule,
    );
    const short = loadConfig({ VRP_WEBHOOK_RETRY_SCHEDULE: '5s, 30s,1m,1.5m, 10' }).webhookRetrySchedule;
    assert.deepEqual(short, [5000, 30_000, M, 90_000, 10_000]);
    assert.ok(Object.isFrozen(short));
    assert.deepEqual(loadConfig({ VRP_WEBHOOK_RETRY_SCHEDULE: '1s' }).webhookRetrySchedule, [1000]);
    assert.deepEqual(loadConfig({ VRP_WEBHOOK_RETRY_SCHEDULE: '7d' }).webhookRetrySchedule, [7 * 24 * H]);
    assert.equal(
      loadConfig({ VRP_WEBHOOK_RETRY_SCHEDULE: Array(20).fill('1m').join(',') }).webhookRetrySchedule.length,
      20,
    );
    for (const bad of [
      '5s,,5m',
      ',',
      '5s,',
      'soon',
      '5s,later',
      '5 s',
      '-5s',
      '500ms',
      '0',
      '8d',
      '5s;5m',
      Array(21).fill('1m').join(','),
    ]) {
      refuses({ VRP_WEBHOOK_RETRY_SCHEDULE: bad }, 'VRP_WEBHOOK_RETRY_SCHEDULE');
      assert.throws(
        () => loadConfig({ VRP_WEBHOOK_RETRY_SCHEDULE: bad }),
        (err: Error) => !err.message.includes('\n'),
      );
    }
  });
});

describe('reverse DNS: VRP_PDNS_* and VRP_RDNS_*', () => {
  const KEY = 'pdns-key-never-shown';

  test('off by default; on with the API URL and its key; the defaults of the rest', () => {
    const off = loadConfig({}).reverseDns;
    assert.deepEqual(off, { pdns: undefined, defaultPattern: undefined, nameservers: [], ttl: 3600 });
    for (const name of [
      'VRP_PDNS_API_URL',
      'VRP_PDNS_API_KEY',
      'VRP_PDNS_SERVER_ID',
      'VRP_RDNS_DEFAULT',
      'VRP_RDNS_NAMESERVERS',
      'VRP_RDNS_TTL',
    ])
      assert.deepEqual(loadConfig({ [name]: '' }).reverseDns, off, `${name}= (empty)`);
    const on = loadConfig({
      VRP_PDNS_API_URL: 'http://127.0.0.1:8081/',
      VRP_PDNS_API_KEY: KEY,
      VRP_RDNS_DEFAULT: 'IP-{ip}.Example.net',
      VRP_RDNS_NAMESERVERS: 'ns1.example.net, NS2.example.net.',
      VRP_RDNS_TTL: '300',
    }).reverseDns;
    assert.deepEqual(on, {
      pdns: { apiUrl: 'http://127.0.0.1:8081', apiKey: KEY, serverId: 'localhost' },
      defaultPattern: 'ip-{ip}.example.net',
      nameservers: ['ns1.example.net.', 'ns2.example.net.'],
      ttl: 300,
    });
    assert.equal(
      loadConfig({
        VRP_PDNS_API_URL: 'https://dns.example.net',
        VRP_PDNS_API_KEY: KEY,
        VRP_PDNS_SERVER_ID: 'ns-a',
      }).reverseDns.pdns?.serverId,
      'ns-a',
    );
  });

  test('bad values are refused naming the setting, never showing the key', () => {
    const api = { VRP_PDNS_API_URL: 'http://127.0.0.1:8081', VRP_PDNS_API_KEY: KEY };
    const cases: [Record<string, string>, string][] = [
      [{ VRP_PDNS_API_URL: 'http://127.0.0.1:8081' }, 'VRP_PDNS_API_KEY'],
      [{ VRP_PDNS_API_KEY: KEY }, 'VRP_PDNS_API_URL'],
      [{ ...api, VRP_PDNS_API_URL: 'ftp://127.0.0.1' }, 'VRP_PDNS_API_URL'],
      [{ ...api, VRP_PDNS_API_URL: `http://user:${KEY}@127.0.0.1:8081` }, 'VRP_PDNS_API_URL'],
      [{ ...api, VRP_PDNS_API_KEY: 'has space' }, 'VRP_PDNS_API_KEY'],
      [{ ...api, VRP_PDNS_SERVER_ID: 'a/b' }, 'VRP_PDNS_SERVER_ID'],
      [{ VRP_RDNS_DEFAULT: 'static.example.net' }, 'VRP_RDNS_DEFAULT'],
      [{ VRP_RDNS_DEFAULT: 'ip_{ip}.example.net' }, 'VRP_RDNS_DEFAULT'],
      [{ VRP_RDNS_DEFAULT: '{ip}-.example.net' }, 'VRP_RDNS_DEFAULT'],
      [{ VRP_RDNS_NAMESERVERS: 'ns1.example.net,bad_ns' }, 'VRP_RDNS_NAMESERVERS'],
      [{ VRP_RDNS_TTL: '0' }, 'VRP_RDNS_TTL'],
    ];
    for (const [env, setting] of cases) {
      refuses(env, setting);
      try {
        loadConfig(env);
      } catch (err) {
        assert.ok(err instanceof ConfigError);
        assert.ok(!err.message.includes(KEY), `"${err.message}" shows the key`);
      }
    }
  });
});

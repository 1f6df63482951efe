import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { isAbsolute, join, resolve } from 'node:path';
import { messageOf } from './domain/errors.ts';
import { isHostname } from './domain/hostname.ts';
import { ADDRESS_PLACEHOLDER, defaultPtr } from './domain/reverse-dns-names.ts';
import { sshFingerprint } from './domain/ssh-fingerprint.ts';
import { RETRY_DELAYS_MS } from './domain/webhook-retry-schedule.ts';
import { ExpectedFailure, systemCause } from './expected-failure.ts';

/** A setting that cannot be used; start-up stops with this message (exit code 2). */
export class ConfigError extends ExpectedFailure {
  override name = 'ConfigError';

  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { exitCode: 2, ...options });
  }
}

export type DriverName = 'simulated' | 'libvirt';
export type WorkerMode = 'both' | 'api' | 'worker';

export interface SimulatedHostConfig {
  readonly id: string;
  readonly cpu: number;
  readonly ramGb: number;
  readonly diskGb: number;
  readonly backupGb: number;
}

export interface LibvirtHostConfig {
  readonly id: string;
  readonly uri: string;
  readonly cpu: number;
  readonly ramGb: number;
  readonly diskGb: number;
}

export interface FaultConfig {
  /** Fraction (0..1) of driver operations that fail with a transient error. */
  readonly transient: number;
  /** Fraction (0..1) of driver operations that fail with a permanent error. */
  readonly permanent: number;
}

/** The host key types a pinned SFTP host key may have (OpenSSH's names). */
export const SFTP_HOST_KEY_TYPES = [
  'ssh-ed25519',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'ssh-rsa',
] as const;
export type SftpHostKeyType = (typeof SFTP_HOST_KEY_TYPES)[number];

/** A pinned SFTP host key: its fingerprint as `ssh-keygen -lf` prints it, and its type when known. */
export interface SftpHostKeyPin {
  /** `SHA256:` and the unpadded base64 of the SHA-256 of the key's blob. */
  readonly fingerprint: string;
  /** Known when the setting is a public key line; a fingerprint alone does not say it. */
  readonly type: SftpHostKeyType | undefined;
}

/** Where backups are kept (VRP_BACKUP_STORE and the settings of its kind). */
export type BackupStoreConfig =
  | { readonly kind: 'local'; readonly path: string }
  | {
      readonly kind: 'sftp';
      readonly host: string;
      readonly port: number;
      readonly username: string;
      readonly path: string;
      /** VRP_BACKUP_SFTP_KEY_FILE, and the key it holds (read at start; a secret). */
      readonly keyFile: string;
      readonly privateKey: string;
      /** VRP_BACKUP_SFTP_HOST_KEY: the server's host key it must offer; undefined: any key. */
      readonly hostKey: SftpHostKeyPin | undefined;
    }
  | {
      readonly kind: 's3';
      readonly bucket: string;
      /** Without slashes at either end; empty: the bucket's top. */
      readonly prefix: string;
      readonly endpoint: string | undefined;
      readonly region: string;
      readonly accessKeyId: string;
      /** A secret. */
      readonly secretAccessKey: string;
      readonly forcePathStyle: boolean;
    };

/** The PowerDNS Authoritative server reverse DNS is written to (its HTTP API). */
export interface PowerDnsConfig {
  /** VRP_PDNS_API_URL: the webserver's root (`http://127.0.0.1:8081`), without a final slash. */
  readonly apiUrl: string;
  /** VRP_PDNS_API_KEY: a secret, never logged. */
  readonly apiKey: string;
  /** VRP_PDNS_SERVER_ID: the `{server_id}` of the API's paths (`localhost`). */
  readonly serverId: string;
}

/** Reverse DNS: where PTR records go and what they are by default. */
export interface ReverseDnsConfig {
  /** Undefined: reverse DNS is off (its routes answer 400 `rdns_unavailable`). */
  readonly pdns: PowerDnsConfig | undefined;
  /** VRP_RDNS_DEFAULT: the default PTR's pattern with `{ip}`; undefined: no PTR by default. */
  readonly defaultPattern: string | undefined;
  /** VRP_RDNS_NAMESERVERS: the NS records of the reverse zones the product creates (absolute, final dot). */
  readonly nameservers: readonly string[];
  /** VRP_RDNS_TTL: the TTL of the PTR records written, in seconds. */
  readonly ttl: number;
}

/** The SMTP server notifications are mailed through (VRP_SMTP_URL, VRP_SMTP_TLS_CA). */
export interface SmtpConfig {
  readonly host: string;
  readonly port: number;
  /** smtps://: TLS from the first byte; smtp://: STARTTLS, required (no mail goes in clear). */
  readonly implicitTls: boolean;
  readonly user: string | undefined;
  /** A secret: never logged, never in a message. */
  readonly password: string | undefined;
  /** VRP_SMTP_TLS_CA: PEM certificates trusted besides the system's (a private CA); read at start. */
  readonly ca: string | undefined;
}

/** Notifications to the operators (docs/operations.md#notifications). */
export interface NotifyConfig {
  /** Undefined: no email is sent (operator webhooks still are). */
  readonly smtp: SmtpConfig | undefined;
  /** VRP_NOTIFY_EMAIL: the recipients. */
  readonly emailTo: readonly string[];
  /** VRP_NOTIFY_FROM: the sender address. */
  readonly emailFrom: string;
  /** VRP_NOTIFY_WINDOW: at most one message per channel per this long (ms). */
  readonly windowMs: number;
}

export interface Config {
  readonly host: string;
  readonly port: number;
  readonly dataDir: string;
  /** `postgres://...` selects PostgreSQL; undefined means SQLite in `dataDir`. */
  readonly databaseUrl: string | undefined;
  readonly databasePoolSize: number;
  readonly driver: DriverName;
  readonly libvirtUri: string;
  /** Hosts of the libvirt driver: VRP_LIBVIRT_HOSTS, or one host at VRP_LIBVIRT_URI. */
  readonly libvirtHosts: readonly LibvirtHostConfig[];
  /** The path of each host's storage pool `vrp` (VM disks, seeds, consoles, templates, backups): the same on every host. */
  readonly libvirtStorage: string;
  /** Domain type: `kvm`, `qemu` (TCG emulation), or `auto` (KVM if it works on the host). */
  readonly libvirtVirtType: 'auto' | 'kvm' | 'qemu';
  /** Bridge the VMs' network interface joins; none if unset. */
  readonly libvirtBridge: string | undefined;
  /** Access token lifetime in seconds. */
  readonly tokenTtl: number;
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  readonly demo: boolean;
  /** Multiplier of the simulated hypervisor's step timings; 0 = instant. */
  readonly simulatedSpeed: number;
  readonly simulatedHosts: readonly SimulatedHostConfig[];
  readonly simulatedIpPool: string;
  readonly simulatedFaults: FaultConfig;
  /** Bytes per second each running simulated VM receives and sends (VRP_SIM_TRAFFIC_RATE); 0 by default. */
  readonly simulatedTrafficRate: { readonly inPerSecond: number; readonly outPerSecond: number };
  /** 32-byte master key (hex or base64); undefined means the key file in `dataDir`. */
  readonly secretKey: string | undefined;
  /**
   * 32-byte key backups are encrypted with (hex or base64); undefined means one derived from the
   * master key. Kept apart from it, it lets another installation read the backups.
   */
  readonly backupKey: string | undefined;
  /** How long a terminated service's backups are kept (then pruned); 0: deleted with the service. */
  readonly backupKeepAfterTerminateMs: number;
  /** Public base URL ({base_url}); undefined means derived from each request's Host. */
  readonly baseUrl: string | undefined;
  /**
   * Origins (`https://panel.example.com`) whose pages may call the reseller API from a browser
   * (CORS); empty: none may (the default).
   */
  readonly corsOrigins: readonly string[];
  /**
   * Addresses and CIDR ranges (`127.0.0.1`, `10.0.0.0/8`) of reverse proxies whose
   * X-Forwarded-For is believed for a request's source address (audit log, login throttle);
   * empty: none is, the address is the connection's (the default).
   */
  readonly trustProxy: readonly string[];
  /**
   * Whether the token endpoint and the operator console answer plain http from outside loopback
   * (src/http/https-only.ts); false: they refuse it, https only (the default).
   */
  readonly allowHttp: boolean;
  readonly workerMode: WorkerMode;
  readonly workerConcurrency: number;
  /**
   * How long an idle worker sleeps before it looks for due jobs (ms). Jobs queued in its own
   * process, and on PostgreSQL in any process, wake it at once; the poll finds the rest (retries
   * coming due, jobs other processes queued on SQLite).
   */
  readonly workerPollMs: number;
  /** How long a claimed job stays owned by its worker without a heartbeat (ms). */
  readonly jobLeaseMs: number;
  /** First retry delay after a transient driver error; doubles per attempt, capped at 5 minutes. */
  readonly jobRetryBaseMs: number;
  /** Attempts before a job with transient errors fails for good. */
  readonly jobMaxAttempts: number;
  /** How long a graceful stop waits before the power is forced off (ms). */
  readonly stopTimeoutMs: number;
  /** How long a template copy no VM uses and no record names stays on a libvirt host before it is removed (ms). */
  readonly templateSweepGraceMs: number;
  /**
   * libvirt copies (volumes between hosts, backups, restores, live migrations):
   * VRP_COPY_STALL, how long one may move no data before it is ended (ms), and
   * VRP_COPY_MIN_RATE, the slowest rate one is given time for (bytes per second; set in MiB/s).
   */
  readonly copyPace: { readonly stallMs: number; readonly minBytesPerSecond: number };
  /** Steady requests per second per application; 0 turns rate limiting off. */
  readonly rateLimit: number;
  readonly rateBurst: number;
  /** How old a missed backup slot may be and still run after a restart (ms). */
  readonly schedulerGraceMs: number;
  readonly schedulerIntervalMs: number;
  /** Time between passes of the power-state reconciler (jobs/reconciler.ts); 0 turns it off. */
  readonly reconcileIntervalMs: number;
  /** Time between readings of every server's interface counters (jobs/traffic-sampler.ts); 0 turns it off. */
  readonly trafficSampleIntervalMs: number;
  /** Migrations an evacuation keeps in flight per host (jobs/evacuator.ts). */
  readonly evacuateConcurrency: number;
  /** Time between probes of each host's connection (jobs/host-health.ts). */
  readonly hostCheckIntervalMs: number;
  /** How long a host's probes fail before it is marked unreachable. */
  readonly hostDownAfterMs: number;
  /** Finished jobs and handled schedule slots are deleted this long after they ended. */
  readonly jobRetentionMs: number;
  /** Audit log entries are deleted this long after they were written. */
  readonly auditRetentionMs: number;
  /** How often the retention pruner runs. */
  readonly pruneIntervalMs: number;
  /** Events and webhook deliveries are deleted this long after they were recorded (at least 7 days). */
  readonly eventRetentionMs: number;
  /** Webhooks may reach private, loopback and link-local addresses (tests, private deployments). */
  readonly webhookAllowPrivate: boolean;
  /** Webhook delivery attempts one process makes at once (one per webhook at a time). */
  readonly webhookConcurrency: number;
  /** The waits before each retry of a failed webhook delivery (ms); one attempt more than waits in all. */
  readonly webhookRetrySchedule: readonly number[];
  /** A console login ends this long after it began, however busy (ms). */
  readonly consoleSessionMs: number;
  /** A console login ends after this long without a page or form (ms). */
  readonly consoleIdleMs: number;
  /** VRP_CONSOLE_REQUIRE_2FA: an operator without two-factor login is sent to enrol at login and opens nothing else. */
  readonly consoleRequire2fa: boolean;
  /** VRP_RESCUE_MAX: a rescue ends by itself this long after it began (the server boots its own system). */
  readonly rescueMaxMs: number;
  /**
   * VRP_RESCUE_IMAGE: the rescue system's image on the hosts, in a template image's form (a qcow2
   * cloud image, or a directory with vmlinuz, initrd.img and disk.qcow2); a host's own
   * `rescue_image` wins. Undefined: only hosts that name one can rescue (libvirt driver).
   */
  readonly rescueImage: string | undefined;
  /** VRP_CONSOLE_SESSION_MAX: how long a customer's console in the browser stays open at most. */
  readonly serviceConsoleMaxMs: number;
  /** Where backups are kept; default: the directory `backups` in `dataDir`. */
  readonly backupStore: BackupStoreConfig;
  /** Reverse DNS on PowerDNS (VRP_PDNS_*, VRP_RDNS_*). */
  readonly reverseDns: ReverseDnsConfig;
  /** Notifications to the operators by email and operator webhooks (VRP_SMTP_*, VRP_NOTIFY_*). */
  readonly notify: NotifyConfig;
  /** Start of the server's clock (tests); undefined means the real time. */
  readonly clockStart: number | undefined;
  /** How fast the server's clock runs relative to real time (tests). */
  readonly clockRate: number;
}

type Env = Readonly<Record<string, string | undefined>>;

function readInt(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^-?\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max)
    throw new ConfigError(`${name} must be between ${min} and ${max}, got ${raw}`);
  return value;
}

function readNumber(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || raw.trim() === '')
    throw new ConfigError(`${name} must be a number, got "${raw}"`);
  if (value < min || value > max)
    throw new ConfigError(`${name} must be between ${min} and ${max}, got ${raw}`);
  return value;
}

function readChoice<T extends string>(env: Env, name: string, fallback: T, choices: readonly T[]): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const choice = choices.find((c) => c === raw);
  if (choice === undefined) {
    throw new ConfigError(`${name} must be one of ${choices.join(', ')}, got "${raw}"`);
  }
  return choice;
}

function readBool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw.toLowerCase())) return true;
  if (['0', 'false', 'no', 'off'].includes(raw.toLowerCase())) return false;
  throw new ConfigError(`${name} must be 1 or 0 (true/false), got "${raw}"`);
}

/** Durations: a number of seconds, or a number with a unit ms, s, m, h. */
const DURATION_UNITS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** `N` (bytes per second in and out) or `IN,OUT`: whole numbers, at most 10^10 (80 Gbit/s). */
function readTrafficRate(env: Env, name: string): { inPerSecond: number; outPerSecond: number } {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return { inPerSecond: 0, outPerSecond: 0 };
  const m = /^(\d{1,11})(?:,(\d{1,11}))?$/.exec(raw.trim());
  const inPerSecond = Number(m?.[1]);
  const outPerSecond = Number(m?.[2] ?? m?.[1]);
  if (!m || inPerSecond > 1e10 || outPerSecond > 1e10)
    throw new ConfigError(
      `${name} must be bytes per second, N or IN,OUT (whole numbers up to 10000000000), got "${raw}"`,
    );
  return { inPerSecond, outPerSecond };
}

function readDurationMs(env: Env, name: string, fallbackMs: number, minMs: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallbackMs;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(raw.trim());
  if (!m) throw new ConfigError(`${name} must be a duration such as 30s, 5m, 6h or 90d, got "${raw}"`);
  const factor = DURATION_UNITS[(m[2] ?? 's') as keyof typeof DURATION_UNITS];
  const ms = Math.round(Number(m[1]) * factor);
  if (ms < minMs) throw new ConfigError(`${name} must be at least ${minMs} ms, got "${raw}"`);
  return ms;
}

/** The most waits a retry schedule may have. */
const MAX_RETRIES = 20;

/**
 * A retry schedule: durations (as readDurationMs reads them), comma-separated, each from 1 s to
 * 7 days (the shortest event retention: a longer wait would outlive the event).
 */
function readRetrySchedule(env: Env, name: string, fallback: readonly number[]): readonly number[] {
  const raw = env[name];
  if (raw === undefined || raw === '') return Object.freeze([...fallback]);
  const parts = raw.split(',').map((p) => p.trim());
  if (parts.length > MAX_RETRIES || parts.some((p) => p === ''))
    throw new ConfigError(
      `${name} must be 1 to ${MAX_RETRIES} comma-separated durations such as 5s,5m,30m, got "${raw}"`,
    );
  const waits = parts.map((p) => {
    const ms = readDurationMs({ [name]: p }, name, 0, 0);
    if (ms < 1000 || ms > 7 * 86_400_000)
      throw new ConfigError(`${name}: each wait must be from 1s to 7d, got "${p}" in "${raw}"`);
    return ms;
  });
  return Object.freeze(waits);
}

/** `id:cpu:ramGb:diskGb[:backupGb]`, comma-separated. */
function readHosts(env: Env, name: string): SimulatedHostConfig[] {
  const raw = env[name] || 'sim-host-1:1024:4096:100000:50000,sim-host-2:1024:4096:100000:50000';
  const hosts = raw.split(',').map((part) => {
    const fields = part.trim().split(':');
    const [id, cpu, ram, disk, backup] = fields;
    const nums = [cpu, ram, disk, backup ?? '0'].map(Number);
    if (
      !id ||
      !/^[a-z0-9][a-z0-9.-]{0,62}$/i.test(id) ||
      fields.length < 4 ||
      fields.length > 5 ||
      nums.some((n) => !Number.isInteger(n) || n < 0)
    ) {
      throw new ConfigError(`${name} must be a list of id:cpu:ramGb:diskGb[:backupGb], got "${part}"`);
    }
    return {
      id,
      cpu: Number(cpu),
      ramGb: Number(ram),
      diskGb: Number(disk),
      backupGb: backup === undefined ? 0 : Number(backup),
    };
  });
  if (new Set(hosts.map((h) => h.id)).size !== hosts.length)
    throw new ConfigError(`${name} repeats a host id`);
  return hosts;
}

/** `id,uri,cpu,ramGb,diskGb` entries separated by `;`. */
function readLibvirtHosts(env: Env, uri: string): LibvirtHostConfig[] {
  const raw = env['VRP_LIBVIRT_HOSTS'];
  if (!raw) return [{ id: 'libvirt-1', uri, cpu: 64, ramGb: 256, diskGb: 2000 }];
  const hosts = raw.split(';').map((entry) => {
    const [id, hostUri, ...nums] = entry.trim().split(',');
    const n = nums.map(Number);
    if (
      !id ||
      !/^[a-z0-9][a-z0-9.-]{0,62}$/i.test(id) ||
      !hostUri ||
      !/^[a-z+]+:\/\//.test(hostUri) ||
      n.length !== 3 ||
      n.some((x) => !Number.isInteger(x) || x < 1)
    ) {
      throw new ConfigError(
        `VRP_LIBVIRT_HOSTS must be entries id,uri,cpu,ramGb,diskGb separated by ";", got "${entry}"`,
      );
    }
    return { id, uri: hostUri, cpu: Number(nums[0]), ramGb: Number(nums[1]), diskGb: Number(nums[2]) };
  });
  if (new Set(hosts.map((h) => h.id)).size !== hosts.length)
    throw new ConfigError('VRP_LIBVIRT_HOSTS repeats a host id');
  return hosts;
}

/** At most a /12 (about a million addresses): start-up writes one row per address. */
function readCidr(env: Env, name: string, fallback: string): string {
  const raw = env[name] || fallback;
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(raw);
  if (!m || m.slice(1, 5).some((o) => Number(o) > 255) || Number(m[5]) < 12 || Number(m[5]) > 30) {
    throw new ConfigError(
      `${name} must be an IPv4 CIDR between /12 (about a million addresses) and /30, got "${raw}"`,
    );
  }
  return raw;
}

function readFaults(env: Env, name: string): FaultConfig {
  const raw = env[name];
  const faults = { transient: 0, permanent: 0 };
  if (!raw) return faults;
  for (const part of raw.split(',')) {
    const [key, value] = part.split('=');
    const n = Number(value);
    if (
      (key !== 'transient' && key !== 'permanent') ||
      !Number.isFinite(n) ||
      n < 0 ||
      n > 1 ||
      value === ''
    ) {
      throw new ConfigError(`${name} must look like transient=0.1,permanent=0.01, got "${raw}"`);
    }
    faults[key] = n;
  }
  return faults;
}

function readSecretKey(env: Env, name: string): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const hex = /^[0-9a-f]{64}$/i.test(raw);
  const b64 = !hex && Buffer.from(raw, 'base64').length === 32;
  if (!hex && !b64) throw new ConfigError(`${name} must be 32 bytes as 64 hex digits or base64`);
  return raw;
}

function readUrl(env: Env, name: string, protocols: readonly string[]): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be a URL, got "${raw}"`);
  }
  if (!protocols.includes(url.protocol)) {
    throw new ConfigError(`${name} must start with ${protocols.map((p) => `${p}//`).join(' or ')}`);
  }
  return raw.replace(/\/+$/, '');
}

/**
 * Exact origins, comma-separated: scheme, host and port as a browser sends them in `Origin`
 * (lower case, no default port, no path), so that each is compared as it stands.
 */
function readOrigins(env: Env, name: string): string[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return [];
  return raw.split(',').map((part) => {
    const entry = part.trim();
    let origin: string | undefined;
    try {
      const url = new URL(entry);
      // A name or an address: URL takes `*` in a host, which no browser sends as an origin.
      const host = /^([a-z0-9-]+\.)*[a-z0-9-]+$|^\[[0-9a-f:.]+\]$/.test(url.hostname);
      if ((url.protocol === 'http:' || url.protocol === 'https:') && host) origin = url.origin;
    } catch {}
    if (origin === entry) return entry;
    const hint = origin && origin !== 'null' ? ` (did you mean ${origin}?)` : '';
    throw new ConfigError(
      `${name} must be a comma-separated list of exact origins such as https://panel.example.com (http or https, no path, no wildcard), got "${entry}"${hint}`,
    );
  });
}

/** Comma-separated IP addresses or CIDR ranges (`10.0.0.0/8`, `::1`). */
function readProxies(env: Env, name: string): string[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return [];
  return raw.split(',').map((part) => {
    const entry = part.trim();
    const [address = '', prefix, ...rest] = entry.split('/');
    const family = isIP(address);
    const bits = family === 6 ? 128 : 32;
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits);
    if (family === 0 || !prefixOk || rest.length > 0) {
      throw new ConfigError(
        `${name} must be a comma-separated list of proxy addresses or CIDR ranges such as 127.0.0.1 or 10.0.0.0/8, got "${entry}"`,
      );
    }
    return entry;
  });
}

function readTime(env: Env, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const t = Date.parse(raw);
  if (Number.isNaN(t)) throw new ConfigError(`${name} must be an ISO 8601 time, got "${raw}"`);
  return t;
}

/** A path segment of a backup store: what object keys are made of. */
const STORE_SEGMENT = /^[A-Za-z0-9._-]+$/;

/**
 * VRP_BACKUP_STORE: `local:/abs/path`, `sftp://user@host[:port]/path` (with
 * VRP_BACKUP_SFTP_KEY_FILE) or `s3://bucket[/prefix]` (with the VRP_BACKUP_S3_* settings).
 * Messages never repeat a secret: a password written into the URL is not echoed.
 */
function readBackupStore(env: Env, dataDir: string): BackupStoreConfig {
  const name = 'VRP_BACKUP_STORE';
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return { kind: 'local', path: join(dataDir, 'backups') };
  if (raw.startsWith('local:')) {
    const path = raw.slice('local:'.length);
    if (!isAbsolute(path)) throw new ConfigError(`${name} local:PATH needs an absolute path, got "${raw}"`);
    return { kind: 'local', path: resolve(path) };
  }
  if (raw.startsWith('sftp:')) return readSftpStore(env, name, raw);
  if (raw.startsWith('s3:')) return readS3Store(env, name, raw);
  throw new ConfigError(
    `${name} must be local:/path, sftp://user@host[:port]/path or s3://bucket[/prefix], got "${raw}"`,
  );
}

function readSftpStore(env: Env, name: string, raw: string): BackupStoreConfig {
  const form = 'sftp://user@host[:port]/path';
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {}
  if (url?.password)
    throw new ConfigError(`${name} must not hold a password: the key is VRP_BACKUP_SFTP_KEY_FILE`);
  const host = url?.hostname.replace(/^\[(.*)\]$/, '$1') ?? '';
  let path = '';
  try {
    path = decodeURIComponent(url?.pathname ?? '');
  } catch {}
  const port = url?.port ? Number(url.port) : 22;
  if (
    !url?.username ||
    !host ||
    url.search ||
    url.hash ||
    !path.startsWith('/') ||
    path.includes('\0') ||
    port === 0
  ) {
    const shown = raw.replace(/^(sftp:\/\/[^:@/]*):[^@/]*@/, '$1:***@');
    throw new ConfigError(`${name} must look like ${form} (an absolute path on the server), got "${shown}"`);
  }
  const keyFile = env['VRP_BACKUP_SFTP_KEY_FILE'];
  if (!keyFile) throw new ConfigError(`VRP_BACKUP_SFTP_KEY_FILE must be set for ${name} ${form}`);
  let privateKey: string;
  try {
    privateKey = readFileSync(keyFile, 'utf8');
  } catch (err) {
    const why = systemCause(err) ?? messageOf(err);
    throw new ConfigError(`VRP_BACKUP_SFTP_KEY_FILE (${keyFile}) cannot be read: ${why}`, { cause: err });
  }
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(privateKey))
    throw new ConfigError(
      `VRP_BACKUP_SFTP_KEY_FILE must hold a private key (OpenSSH or PEM, without a passphrase): ${keyFile}`,
    );
  return {
    kind: 'sftp',
    host,
    port,
    username: decodeURIComponent(url.username),
    path: path.length > 1 ? path.replace(/\/+$/, '') : path,
    keyFile,
    privateKey,
    hostKey: readSftpHostKey(env),
  };
}

/** An SSH wire blob's length-prefixed strings; none when it is not made of them exactly. */
function sshStrings(blob: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < blob.length; ) {
    if (at + 4 > blob.length) return [];
    const end = at + 4 + blob.readUInt32BE(at);
    if (end > blob.length) return [];
    out.push(blob.subarray(at + 4, end));
    at = end;
  }
  return out;
}

/**
 * VRP_BACKUP_SFTP_HOST_KEY: an OpenSSH public key line (`ssh-ed25519 AAAA... [comment]`, as in
 * a `.pub` file; a leading host name as `ssh-keyscan` prints it is skipped) or a fingerprint
 * `SHA256:...` as `ssh-keygen -lf` prints it.
 */
function readSftpHostKey(env: Env): SftpHostKeyPin | undefined {
  const name = 'VRP_BACKUP_SFTP_HOST_KEY';
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return undefined;
  const form = `an OpenSSH public key line (${SFTP_HOST_KEY_TYPES.join(', ')}) or a fingerprint SHA256:... as ssh-keygen -lf prints it`;
  const fp = /^SHA256:([A-Za-z0-9+/]{43})=?$/.exec(raw);
  if (fp) return { fingerprint: `SHA256:${fp[1]}`, type: undefined };
  const words = raw.split(/\s+/);
  const known = (word: string | undefined) => SFTP_HOST_KEY_TYPES.find((t) => t === word);
  const at = known(words[0]) ? 0 : known(words[1]) ? 1 : -1;
  const type = known(words[at]);
  const data = words[at + 1] ?? '';
  if (!type) throw new ConfigError(`${name} must be ${form}, got "${raw}"`);
  const blob = Buffer.from(data, 'base64');
  const fields =
    /^[A-Za-z0-9+/]+={0,2}$/.test(data) && blob.toString('base64') === data ? sshStrings(blob) : [];
  // The blob is its type name then the key: ed25519's 32 bytes, ECDSA's curve and point, RSA's e and n.
  if (
    fields[0]?.toString('latin1') !== type ||
    fields.length !== (type === 'ssh-ed25519' ? 2 : 3) ||
    (type === 'ssh-ed25519' && fields[1]?.length !== 32)
  )
    throw new ConfigError(`${name}: the ${type} key's base64 is not a ${type} public key`);
  return { fingerprint: sshFingerprint(blob), type };
}

function readS3Store(env: Env, name: string, raw: string): BackupStoreConfig {
  const m = /^s3:\/\/([^/]+)(?:\/(.*))?$/.exec(raw);
  const bucket = m?.[1] ?? '';
  const prefix = (m?.[2] ?? '').replace(/^\/+|\/+$/g, '');
  if (!m || !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket))
    throw new ConfigError(
      `${name} must look like s3://bucket[/prefix], the bucket 3-63 lower-case letters, digits, dots and hyphens, got "${raw}"`,
    );
  if (prefix !== '' && !prefix.split('/').every((p) => STORE_SEGMENT.test(p) && p !== '.' && p !== '..'))
    throw new ConfigError(
      `${name}: the prefix must be names of letters, digits, dots, hyphens and underscores separated by "/", got "${raw}"`,
    );
  const endpoint = readUrl(env, 'VRP_BACKUP_S3_ENDPOINT', ['http:', 'https:']);
  if (endpoint !== undefined) {
    const url = new URL(endpoint);
    if (url.username || url.password || url.search || url.hash)
      throw new ConfigError(
        'VRP_BACKUP_S3_ENDPOINT must be a plain http(s)://host[:port] URL (the keys go in VRP_BACKUP_S3_ACCESS_KEY_ID and VRP_BACKUP_S3_SECRET_ACCESS_KEY)',
      );
  }
  const region = env['VRP_BACKUP_S3_REGION'] || 'us-east-1';
  if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(region))
    throw new ConfigError(`VRP_BACKUP_S3_REGION must be a region name such as eu-west-1, got "${region}"`);
  const accessKeyId = env['VRP_BACKUP_S3_ACCESS_KEY_ID'] ?? '';
  if (accessKeyId === '')
    throw new ConfigError(`VRP_BACKUP_S3_ACCESS_KEY_ID must be set for ${name} s3://...`);
  if (!/^[\x21-\x7e]+$/.test(accessKeyId))
    throw new ConfigError('VRP_BACKUP_S3_ACCESS_KEY_ID must be printable characters without spaces');
  const secretAccessKey = env['VRP_BACKUP_S3_SECRET_ACCESS_KEY'] ?? '';
  if (secretAccessKey === '')
    throw new ConfigError(`VRP_BACKUP_S3_SECRET_ACCESS_KEY must be set for ${name} s3://...`);
  if (!/^[\x21-\x7e]+$/.test(secretAccessKey))
    throw new ConfigError('VRP_BACKUP_S3_SECRET_ACCESS_KEY must be printable characters without spaces');
  return {
    kind: 's3',
    bucket,
    prefix,
    endpoint,
    region,
    accessKeyId,
    secretAccessKey,
    forcePathStyle: readBool(env, 'VRP_BACKUP_S3_PATH_STYLE', endpoint !== undefined),
  };
}

/**
 * VRP_PDNS_API_URL with VRP_PDNS_API_KEY (both or neither) and VRP_PDNS_SERVER_ID; the default
 * PTR pattern VRP_RDNS_DEFAULT, the reverse zones' VRP_RDNS_NAMESERVERS and VRP_RDNS_TTL.
 * Messages never repeat the API key.
 */
function readReverseDns(env: Env): ReverseDnsConfig {
  const apiUrl = readUrl(env, 'VRP_PDNS_API_URL', ['http:', 'https:']);
  const apiKey = env['VRP_PDNS_API_KEY'] ?? '';
  if (apiUrl !== undefined) {
    const url = new URL(apiUrl);
    if (url.username || url.password || url.search || url.hash)
      throw new ConfigError(
        "VRP_PDNS_API_URL must be the PowerDNS webserver's root such as http://127.0.0.1:8081 (no user, query or fragment; the key goes in VRP_PDNS_API_KEY)",
      );
    if (apiKey === '') throw new ConfigError('VRP_PDNS_API_KEY must be set with VRP_PDNS_API_URL');
    if (!/^[\x21-\x7e]+$/.test(apiKey))
      throw new ConfigError('VRP_PDNS_API_KEY must be printable characters without spaces');
  } else if (apiKey !== '') {
    throw new ConfigError('VRP_PDNS_API_KEY is set but VRP_PDNS_API_URL is not');
  }
  const serverId = env['VRP_PDNS_SERVER_ID'] || 'localhost';
  if (!/^[A-Za-z0-9._-]{1,100}$/.test(serverId))
    throw new ConfigError(
      `VRP_PDNS_SERVER_ID must be letters, digits, dots, hyphens and underscores, got "${serverId}"`,
    );

  const pattern = env['VRP_RDNS_DEFAULT']?.trim() || undefined;
  if (pattern !== undefined) {
    const samples = ['192.0.2.5', '2001:db8::1'].map((ip) => defaultPtr(pattern, ip) ?? '');
    if (!pattern.includes(ADDRESS_PLACEHOLDER) || !samples.every(isHostname))
      throw new ConfigError(
        `VRP_RDNS_DEFAULT must be a host name with ${ADDRESS_PLACEHOLDER} in it, such as ip-${ADDRESS_PLACEHOLDER}.example.net, got "${pattern}"`,
      );
  }
  const nameservers = (env['VRP_RDNS_NAMESERVERS'] ?? '')
    .split(',')
    .map((n) => n.trim().toLowerCase().replace(/\.$/, ''))
    .filter((n) => n !== '');
  for (const ns of nameservers) {
    if (!isHostname(ns))
      throw new ConfigError(
        `VRP_RDNS_NAMESERVERS must be comma-separated host names such as ns1.example.net,ns2.example.net, got "${ns}"`,
      );
  }
  return {
    pdns: apiUrl === undefined ? undefined : Object.freeze({ apiUrl, apiKey, serverId }),
    defaultPattern: pattern?.toLowerCase(),
    nameservers: Object.freeze(nameservers.map((n) => `${n}.`)),
    ttl: readInt(env, 'VRP_RDNS_TTL', 3600, 1, 2_147_483_647),
  };
}

/** An email address as notifications need one: local part, @, a domain; no spaces or angle brackets. */
const EMAIL = /^[^\s@<>,;"]+@[A-Za-z0-9.-]+$/;

/**
 * VRP_SMTP_URL (`smtp://user:pass@host:587`, STARTTLS required; `smtps://` for TLS from the
 * start), VRP_SMTP_TLS_CA, VRP_NOTIFY_EMAIL, VRP_NOTIFY_FROM and VRP_NOTIFY_WINDOW. Messages
 * never repeat the password: the URL is shown with `***` in its place.
 */
function readNotify(env: Env): NotifyConfig {
  const raw = env['VRP_SMTP_URL']?.trim() ?? '';
  const shown = raw.replace(/^([a-z]+:\/\/[^:@/]*):[^@/]*@/i, '$1:***@');
  let smtp: SmtpConfig | undefined;
  if (raw !== '') {
    let url: URL | undefined;
    try {
      url = new URL(raw);
    } catch {}
    if (
      !url ||
      (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') ||
      !url.hostname ||
      url.search ||
      url.hash ||
      (url.pathname !== '' && url.pathname !== '/')
    )
      throw new ConfigError(
        `VRP_SMTP_URL must look like smtp://user:password@host:587 (or smtps://), got "${shown}"`,
      );
    const implicitTls = url.protocol === 'smtps:';
    let user: string | undefined;
    let password: string | undefined;
    try {
      user = url.username ? decodeURIComponent(url.username) : undefined;
      password = url.password ? decodeURIComponent(url.password) : undefined;
    } catch {
      throw new ConfigError(`VRP_SMTP_URL: the user or password is not well percent-encoded, got "${shown}"`);
    }
    smtp = {
      host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: url.port ? Number(url.port) : implicitTls ? 465 : 587,
      implicitTls,
      user,
      password,
      ca: readCaFile(env, 'VRP_SMTP_TLS_CA'),
    };
  }
  const emailTo = (env['VRP_NOTIFY_EMAIL'] ?? '')
    .split(',')
    .map((a) => a.trim())
    .filter((a) => a !== '');
  for (const a of emailTo) {
    if (!EMAIL.test(a))
      throw new ConfigError(`VRP_NOTIFY_EMAIL must be comma-separated email addresses, got "${a}"`);
  }
  if (smtp && emailTo.length === 0) throw new ConfigError('VRP_NOTIFY_EMAIL must be set with VRP_SMTP_URL');
  if (!smtp && emailTo.length > 0) throw new ConfigError('VRP_NOTIFY_EMAIL is set but VRP_SMTP_URL is not');
  const emailFrom = env['VRP_NOTIFY_FROM']?.trim() || 'vrp@localhost';
  if (!EMAIL.test(emailFrom))
    throw new ConfigError(`VRP_NOTIFY_FROM must be an email address, got "${emailFrom}"`);
  return {
    smtp: smtp && Object.freeze(smtp),
    emailTo: Object.freeze(emailTo),
    emailFrom,
    windowMs: readDurationMs(env, 'VRP_NOTIFY_WINDOW', 60_000, 1000),
  };
}

/** A file of PEM certificates, read at start. */
function readCaFile(env: Env, name: string): string | undefined {
  const path = env[name];
  if (path === undefined || path === '') return undefined;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const why = systemCause(err) ?? messageOf(err);
    throw new ConfigError(`${name} (${path}) cannot be read: ${why}`, { cause: err });
  }
  if (!text.includes('-----BEGIN CERTIFICATE-----'))
    throw new ConfigError(`${name} must hold PEM certificates (-----BEGIN CERTIFICATE-----): ${path}`);
  return text;
}

/** Reads and validates every setting once; the result is frozen. */
export function loadConfig(env: Env = process.env): Config {
  const dataDir = resolve(env['VRP_DATA_DIR'] || './data');
  const config: Config = {
    host: env['VRP_HOST'] || '127.0.0.1',
    port: readInt(env, 'VRP_PORT', 8080, 0, 65535),
    dataDir,
    databaseUrl: readUrl(env, 'VRP_DATABASE_URL', ['postgres:', 'postgresql:']),
    databasePoolSize: readInt(env, 'VRP_DATABASE_POOL', 10, 1, 1000),
    driver: readChoice<DriverName>(env, 'VRP_DRIVER', 'simulated', ['simulated', 'libvirt']),
    libvirtUri: env['VRP_LIBVIRT_URI'] || 'qemu:///system',
    libvirtHosts: readLibvirtHosts(env, env['VRP_LIBVIRT_URI'] || 'qemu:///system'),
    libvirtStorage: resolve(env['VRP_LIBVIRT_STORAGE'] || '/var/lib/vrp/pool'),
    libvirtVirtType: readChoice(env, 'VRP_LIBVIRT_VIRT_TYPE', 'auto', ['auto', 'kvm', 'qemu']),
    libvirtBridge: env['VRP_LIBVIRT_BRIDGE'] || undefined,
    tokenTtl: readInt(env, 'VRP_TOKEN_TTL', 3600, 60, 86400 * 30),
    logLevel: readChoice(env, 'VRP_LOG_LEVEL', 'info', [
      'fatal',
      'error',
      'warn',
      'info',
      'debug',
      'trace',
      'silent',
    ]),
    demo: readBool(env, 'VRP_DEMO', true),
    simulatedSpeed: readNumber(env, 'VRP_SIMULATED_SPEED', 1, 0, 1000),
    simulatedHosts: readHosts(env, 'VRP_SIM_HOSTS'),
    simulatedIpPool: readCidr(env, 'VRP_SIM_IP_POOL', '10.80.0.0/16'),
    simulatedFaults: readFaults(env, 'VRP_SIM_FAULTS'),
    simulatedTrafficRate: readTrafficRate(env, 'VRP_SIM_TRAFFIC_RATE'),
    secretKey: readSecretKey(env, 'VRP_SECRET_KEY'),
    backupKey: readSecretKey(env, 'VRP_BACKUP_KEY'),
    backupKeepAfterTerminateMs: readDurationMs(env, 'VRP_BACKUP_KEEP_AFTER_TERMINATE', 0, 0),
    baseUrl: readUrl(env, 'VRP_BASE_URL', ['http:', 'https:']),
    corsOrigins: readOrigins(env, 'VRP_CORS_ORIGINS'),
    trustProxy: readProxies(env, 'VRP_TRUST_PROXY'),
    allowHttp: readBool(env, 'VRP_ALLOW_HTTP', false),
    workerMode: readChoice<WorkerMode>(env, 'VRP_ROLE', 'both', ['both', 'api', 'worker']),
    workerConcurrency: readInt(env, 'VRP_WORKER_CONCURRENCY', 16, 1, 1000),
    workerPollMs: readDurationMs(env, 'VRP_WORKER_POLL', 500, 10),
    jobLeaseMs: readDurationMs(env, 'VRP_JOB_LEASE', 30_000, 1000),
    jobRetryBaseMs: readDurationMs(env, 'VRP_JOB_RETRY_BASE', 2000, 1),
    jobMaxAttempts: readInt(env, 'VRP_JOB_MAX_ATTEMPTS', 6, 1, 100),
    stopTimeoutMs: readDurationMs(env, 'VRP_STOP_TIMEOUT', 120_000, 0),
    // At least 14 h: a removal comes half a grace less 3.5 h or more after the row moved on (3.5 h),
    // and a step that read the row names the upload within minutes (a cold migration looks at it
    // again before it does; template-sweep.ts).
    templateSweepGraceMs: readDurationMs(env, 'VRP_TEMPLATE_SWEEP_GRACE', 16 * 3_600_000, 14 * 3_600_000),
    copyPace: {
      stallMs: readDurationMs(env, 'VRP_COPY_STALL', 5 * 60_000, 1000),
      minBytesPerSecond: readInt(env, 'VRP_COPY_MIN_RATE', 10, 1, 100_000) * 1024 * 1024,
    },
    rateLimit: readInt(env, 'VRP_RATE_LIMIT', 50, 0, 1_000_000),
    rateBurst: readInt(env, 'VRP_RATE_BURST', 100, 1, 1_000_000),
    schedulerGraceMs: readDurationMs(env, 'VRP_SCHEDULER_GRACE', 6 * 3_600_000, 0),
    schedulerIntervalMs: readDurationMs(env, 'VRP_SCHEDULER_INTERVAL', 15_000, 10),
    reconcileIntervalMs: readDurationMs(env, 'VRP_RECONCILE_INTERVAL', 15_000, 0),
    trafficSampleIntervalMs: readDurationMs(env, 'VRP_TRAFFIC_SAMPLE_INTERVAL', 5 * 60_000, 0),
    evacuateConcurrency: readInt(env, 'VRP_EVACUATE_CONCURRENCY', 2, 1, 100),
    hostCheckIntervalMs: readDurationMs(env, 'VRP_HOST_CHECK_INTERVAL', 10_000, 10),
    hostDownAfterMs: readDurationMs(env, 'VRP_HOST_DOWN_AFTER', 60_000, 0),
    jobRetentionMs: readDurationMs(env, 'VRP_JOB_RETENTION', 90 * 86_400_000, 3_600_000),
    auditRetentionMs: readDurationMs(env, 'VRP_AUDIT_RETENTION', 365 * 86_400_000, 86_400_000),
    pruneIntervalMs: readDurationMs(env, 'VRP_PRUNE_INTERVAL', 3_600_000, 1000),
    eventRetentionMs: readDurationMs(env, 'VRP_EVENT_RETENTION', 30 * 86_400_000, 7 * 86_400_000),
    webhookAllowPrivate: readBool(env, 'VRP_WEBHOOK_ALLOW_PRIVATE', false),
    webhookConcurrency: readInt(env, 'VRP_WEBHOOK_CONCURRENCY', 16, 1, 1000),
    webhookRetrySchedule: readRetrySchedule(env, 'VRP_WEBHOOK_RETRY_SCHEDULE', RETRY_DELAYS_MS),
    consoleSessionMs: readDurationMs(env, 'VRP_CONSOLE_SESSION', 12 * 3_600_000, 60_000),
    consoleIdleMs: readDurationMs(env, 'VRP_CONSOLE_IDLE', 30 * 60_000, 60_000),
    consoleRequire2fa: readBool(env, 'VRP_CONSOLE_REQUIRE_2FA', false),
    rescueMaxMs: readDurationMs(env, 'VRP_RESCUE_MAX', 60 * 60_000, 1000),
    rescueImage: env['VRP_RESCUE_IMAGE'] || undefined,
    serviceConsoleMaxMs: readDurationMs(env, 'VRP_CONSOLE_SESSION_MAX', 3_600_000, 1000),
    backupStore: Object.freeze(readBackupStore(env, dataDir)),
    reverseDns: Object.freeze(readReverseDns(env)),
    notify: Object.freeze(readNotify(env)),
    clockStart: readTime(env, 'VRP_CLOCK_START'),
    clockRate: readNumber(env, 'VRP_CLOCK_RATE', 1, 0.001, 100_000),
  };
  if (config.databaseUrl === undefined && !config.dataDir) throw new ConfigError('VRP_DATA_DIR must be set');
  return Object.freeze(config);
}

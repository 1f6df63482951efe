import { findClientCredential, loadAnyClientState } from './auth/client-lookup.ts';
import { type ClientStateCache, createClientStateCache } from './auth/client-state.ts';
import { checkKeyAgainstStore } from './auth/key-check.ts';
import { decodeKey, deriveKeys, type Keys, keyFilePath, loadMasterKey } from './auth/keys.ts';
import { createSecretBox } from './auth/secret-box.ts';
import { PASSWORD_COST, SECRET_COST, type SecretCost } from './auth/secret-hash.ts';
import { createTokenSigner, type TokenSigner } from './auth/tokens.ts';
import type { Config } from './config.ts';
import { type Clock, createClock } from './domain/clock.ts';
import type { SecretBox } from './domain/secret-box.ts';
import { createBackupStore } from './drivers/backup-store/index.ts';
import type { BackupStore } from './drivers/backup-store/store.ts';
import { createPowerDns } from './drivers/reverse-dns/powerdns.ts';
import type { ReverseDns } from './drivers/reverse-dns/ptr-backend.ts';
import { templatesNeedImages } from './drivers/template-images.ts';
import { createNotifier, type Notifier } from './loop/notifier.ts';
import { createJobSignal, type JobSignal } from './loop/signal.ts';
import { createMetrics, type Metrics } from './metrics.ts';
import { type CatalogCache, createCatalogCache } from './store/catalog-cache.ts';
import { openStore, type Store } from './store/database.ts';
import { type HostLookup, systemLookup } from './webhooks/lookup.ts';

/** Everything the HTTP app, the worker and the scheduler share; built once per process. */
export interface AppContext {
  readonly config: Config;
  readonly store: Store;
  readonly clock: Clock;
  readonly keys: Keys;
  readonly signer: TokenSigner;
  readonly secretBox: SecretBox;
  readonly clientStates: ClientStateCache;
  readonly catalog: CatalogCache;
  /** Wakes this process's worker when a request enqueues a job. */
  readonly jobSignal: JobSignal;
  /** Wakes this process's evacuator when a request here asks for an evacuation. */
  readonly evacuations: Notifier;
  /** This process's Prometheus metrics: HTTP answers, job runs, the queue, webhook deliveries. */
  readonly metrics: Metrics;
  /** Resolves webhook receivers' host names (the system resolver; tests give their own). */
  readonly lookup: HostLookup;
  /**
   * The scrypt cost of the applications' secret hashes, which the token endpoint's dummy hash
   * (for ids that name no application) matches: SECRET_COST. Tests that register their
   * applications at a lower cost set theirs here, as they set their own clock.
   */
  readonly secretCost: SecretCost;
  /**
   * The scrypt cost of operators' console passwords, which the console login's dummy hash (for
   * names that have no password) matches: PASSWORD_COST; tests set theirs, as for secretCost.
   */
  readonly passwordCost: SecretCost;
  /** Where backups are kept (drivers/backup-store/): jobs write them, the operator API verifies them. */
  readonly backupStore: BackupStore;
  /** The key backups are sealed with: VRP_BACKUP_KEY, else derived from the master key. */
  readonly backupKey: Buffer;
  /** Reverse DNS on PowerDNS (VRP_PDNS_API_URL); undefined when it is not configured. */
  readonly reverseDns: ReverseDns | undefined;
}

/** Reverse DNS as the settings describe it: PowerDNS' API and the default pattern; none without VRP_PDNS_API_URL. */
export function reverseDnsOf(config: Config): ReverseDns | undefined {
  const { pdns, nameservers, ttl, defaultPattern } = config.reverseDns;
  if (!pdns) return undefined;
  return { backend: createPowerDns({ ...pdns, nameservers, ttl }), defaultPattern };
}

/** Where backups are kept: the store VRP_BACKUP_STORE names (default: `backups` in the data dir). */
export function openBackupStore(config: Config): Promise<BackupStore> {
  return createBackupStore(config.backupStore);
}

/** The key backups are sealed with: VRP_BACKUP_KEY, else the one derived from the master key. */
export function backupKeyOf(config: Config, keys: Keys): Buffer {
  return config.backupKey ? decodeKey(config.backupKey) : keys.backupKey;
}

/**
 * Opens (and migrates) the store, derives the keys and checks that they are the store's. The
 * caller closes `store`.
 */
export async function createContext(config: Config): Promise<AppContext> {
  const keys = deriveKeys(loadMasterKey(config.secretKey, config.dataDir));
  const store = await openStore({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolSize: config.databasePoolSize,
  });
  const keySource = config.secretKey
    ? 'VRP_SECRET_KEY'
    : `the key in ${keyFilePath(config.dataDir)} (VRP_SECRET_KEY is not set)`;
  try {
    await checkKeyAgainstStore(store.db, keys.check, keySource, store.location);
  } catch (err) {
    await store.close();
    throw err;
  }
  const clock = createClock(config.clockStart, config.clockRate);
  return {
    config,
    store,
    clock,
    keys,
    signer: createTokenSigner(keys.tokenKey),
    secretBox: createSecretBox(keys.passwordKey),
    clientStates: createClientStateCache({
      state: (id) => loadAnyClientState(store.db, id),
      credential: (id) => findClientCredential(store.db, id),
    }),
    catalog: createCatalogCache(store.db, Date.now, { templatesNeedImages: templatesNeedImages(config) }),
    jobSignal: createJobSignal(),
    evacuations: createNotifier(),
    metrics: createMetrics(store, clock),
    lookup: systemLookup,
    secretCost: SECRET_COST,
    passwordCost: PASSWORD_COST,
    backupStore: await openBackupStore(config),
    backupKey: backupKeyOf(config, keys),
    reverseDns: reverseDnsOf(config),
  };
}

/** One PTR record to write: `ptr` null removes the record of `name`. */
export interface PtrChange {
  /** The reverse zone holding the name, absolute (`2.0.192.in-addr.arpa.`). */
  readonly zone: string;
  /** The reverse name, absolute (`5.2.0.192.in-addr.arpa.`). */
  readonly name: string;
  /** The host name it points to, without a final dot; null: no PTR record. */
  readonly ptr: string | null;
}

/**
 * Where reverse DNS is kept: a DNS server's API. `apply` writes every change or throws
 * ReverseDnsError; zones a record needs are created first. Removing a record that is not there,
 * or one of a zone that does not exist, is done already.
 */
export interface PtrBackend {
  apply(changes: readonly PtrChange[], signal?: AbortSignal): Promise<void>;
}

/** The DNS API failed or could not be reached. The message is safe to log (no key); the cause is what failed. */
export class ReverseDnsError extends Error {
  override name = 'ReverseDnsError';
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { cause: options.cause });
  }
}

/** Reverse DNS as a process runs it: where records go, and the operator's default pattern. */
export interface ReverseDns {
  readonly backend: PtrBackend;
  /** VRP_RDNS_DEFAULT (`ip-{ip}.example.net`); undefined: no PTR by default. */
  readonly defaultPattern: string | undefined;
}

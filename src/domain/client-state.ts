import type { Role } from './roles.ts';

interface ClientStateBase {
  readonly clientId: string;
  /** The client is enabled, and so is its reseller or operator. */
  readonly enabled: boolean;
  readonly tokenVersion: number;
  /** The envelope its answers default to. */
  readonly variant: 'A' | 'B';
}

/** A reseller application: its tokens act in its reseller's tenant. */
export interface ApplicationState extends ClientStateBase {
  readonly kind: 'application';
  readonly resellerId: string;
  /** `reseller / application`: how the audit log names it. */
  readonly name: string;
}

/** An operator's client: its tokens carry the scope `operator` and act for no tenant. */
export interface OperatorState extends ClientStateBase {
  readonly kind: 'operator';
  readonly operatorId: string;
  readonly operatorName: string;
  /** Read with the rest of the state at request time: a change of role applies within the cache's life. */
  readonly role: Role;
}

/** What token verification needs to know of a client now (auth/client-lookup.ts reads it from the store). */
export type ClientState = ApplicationState | OperatorState;

import { userInfo } from 'node:os';
import type { AuditContext } from '../store/repos/audit.ts';

/** The local user running `vrp`: who the audit log names for a CLI change. */
function localUser(): string {
  try {
    return userInfo().username;
  } catch {
    // A uid without a passwd entry (some containers): still a CLI change, by someone unnamed.
    return 'unknown';
  }
}

/** The audit context of a `vrp` command's change: actor `cli`, named by the local user; no request. */
export function cliAudit(action: string): AuditContext {
  const user = localUser();
  return { actor: { type: 'cli', id: user, name: user }, requestId: null, action };
}

import { createHash } from 'node:crypto';

/**
 * An SSH public key's fingerprint as `ssh-keygen -l` prints it: `SHA256:` and the unpadded
 * base64 of the SHA-256 of the key blob (the base64 part of a `.pub` line, decoded). The one rule
 * for customers' keys (details), the SFTP store's pinned host key and what it is compared with.
 */
export function sshFingerprint(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/**
 * OpenSSH public keys for root, as create-order and reinstall take them: one key per string,
 * `type base64 [comment]` (a line of an authorized_keys file, without options). Parsed by ssh2's
 * key parser, so a blob that is not a key of its declared type is refused, not just a string of
 * the right shape.
 */
import { createPublicKey } from 'node:crypto';
import { createRequire } from 'node:module';
import type Ssh2 from 'ssh2';
import { ApiError } from './errors.ts';
import { sshFingerprint } from './ssh-fingerprint.ts';

/** How many keys a service may have. */
export const MAX_SSH_KEYS = 10;
/** The smallest RSA modulus accepted, in bits (smaller ones are breakable). */
export const MIN_RSA_BITS = 2048;
/**
 * The longest entry looked at, in characters: far above any accepted key (an RSA key of 16384
 * bits with a long comment is under 3,000), so that a longer one is refused before it is parsed.
 */
export const MAX_SSH_KEY_LENGTH = 16384;

/** The key types accepted, each with the curve its blob must carry (ECDSA). */
const TYPES: Readonly<Record<string, string | null>> = {
  'ssh-ed25519': null,
  'ssh-rsa': null,
  'ecdsa-sha2-nistp256': 'prime256v1',
  'ecdsa-sha2-nistp384': 'secp384r1',
  'ecdsa-sha2-nistp521': 'secp521r1',
};
export const SSH_KEY_TYPES = Object.keys(TYPES);

/** A key as it is stored and installed: `type base64 comment` (no comment: `type base64`). */
export interface SshKey {
  readonly type: string;
  readonly blob: Buffer;
  readonly comment: string;
}

/** The key's fingerprint as `ssh-keygen -l` prints it: `SHA256:` and the unpadded base64 of the blob's SHA-256. */
export function sshKeyFingerprint(key: string): string {
  return sshFingerprint(Buffer.from(key.split(' ')[1] ?? '', 'base64'));
}

/** The type string a key blob starts with (SSH wire format: uint32 length, then the bytes). */
function blobType(blob: Buffer): string | undefined {
  if (blob.length < 4) return undefined;
  const n = blob.readUInt32BE(0);
  if (n > blob.length - 4) return undefined;
  return blob.subarray(4, 4 + n).toString('latin1');
}

let ssh2: typeof Ssh2 | undefined;
const loadSsh2 = (): typeof Ssh2 => createRequire(import.meta.url)('ssh2');
/**
 * ssh2's key parser. The library (with its SSH client and server) is loaded by the first key
 * given, not with the process: most processes never see one (bench/FINDINGS.md, "Memory at rest").
 */
function parseKey(text: string): ReturnType<typeof Ssh2.utils.parseKey> {
  ssh2 ??= loadSsh2();
  return ssh2.utils.parseKey(text);
}

/** Why `text` is not an accepted key (a sentence), or the key. */
function parseOne(text: string): SshKey | string {
  if (text.length > MAX_SSH_KEY_LENGTH) {
    return `longer than ${MAX_SSH_KEY_LENGTH} characters (${text.length}); give one OpenSSH public key (\`type base64 comment\`)`;
  }
  const trimmed = text.trim();
  if (trimmed === '') return 'empty; give an OpenSSH public key (`type base64 comment`)';
  const whole = parseKey(trimmed);
  if (!(whole instanceof Error) && whole.isPrivateKey()) {
    return 'this is a private key; give the public one (the .pub file), never the private key';
  }
  // A private key pasted line by line (a form that takes a key per line) comes as its PEM lines.
  if (/^-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/.test(trimmed)) {
    return 'this is (the start of) a private key; give the public one (the .pub file), never the private key';
  }
  if (/[\r\n]/.test(trimmed)) return 'one key per entry, on one line';
  if (/[\p{Cc}]/u.test(trimmed.replace(/\t/g, ' '))) return 'contains control characters';
  const [type = '', data = '', ...rest] = trimmed.split(/[ \t]+/);
  const comment = rest.join(' ');
  if (type === 'ssh-dss') return 'DSA keys (ssh-dss) are not accepted: they are obsolete; use ssh-ed25519';
  if (!(type in TYPES)) {
    return `the key type "${type.slice(0, 40)}" is not accepted; use one of ${SSH_KEY_TYPES.join(', ')}`;
  }
  const blob = Buffer.from(data, 'base64');
  if (blob.length === 0 || blob.toString('base64') !== data) return 'the key data is not valid base64';
  if (blobType(blob) !== type) return `the key data is not a ${type} key`;
  const parsed = parseKey(`${type} ${data}`);
  if (parsed instanceof Error) return `the key data is not a valid ${type} key (truncated or damaged)`;
  // The parser rebuilds the blob from what it read: bytes beyond the key (or missing) show here.
  if (parsed.type !== type || !parsed.getPublicSSH().equals(blob)) {
    return `the key data is not a valid ${type} key (truncated or damaged)`;
  }
  let details: NodeJS.Dict<unknown>;
  try {
    details = { ...createPublicKey(parsed.getPublicPEM()).asymmetricKeyDetails };
  } catch {
    return `the key data is not a valid ${type} key`;
  }
  if (type === 'ssh-rsa') {
    const bits = details['modulusLength'];
    if (typeof bits !== 'number' || bits < MIN_RSA_BITS) {
      return `an RSA key must have at least ${MIN_RSA_BITS} bits, this one has ${String(bits)}`;
    }
  }
  const curve = TYPES[type];
  if (curve && details['namedCurve'] !== curve) return `the key data is not a ${type} key`;
  return { type, blob, comment };
}

/**
 * Checks every key and returns them normalised (`type base64 comment`), in the order given.
 * 400 `invalid_ssh_key` naming the first bad one as `<field>[i]`: a string that is not one
 * OpenSSH public key (one longer than MAX_SSH_KEY_LENGTH among them), a type not accepted (DSA,
 * RSA under 2048 bits, certificates, others), a private key, a key given twice, more than
 * MAX_SSH_KEYS keys.
 */
export function checkSshKeys(keys: readonly string[], field = 'ssh_keys'): string[] {
  if (keys.length > MAX_SSH_KEYS) {
    throw new ApiError('invalid_ssh_key', `${field}: at most ${MAX_SSH_KEYS} keys, got ${keys.length}`);
  }
  const seen = new Map<string, number>();
  return keys.map((text, i) => {
    const key = parseOne(text);
    if (typeof key === 'string') throw new ApiError('invalid_ssh_key', `${field}[${i}]: ${key}`);
    const id = key.blob.toString('base64');
    const first = seen.get(id);
    if (first !== undefined) {
      throw new ApiError('invalid_ssh_key', `${field}[${i}]: the same key as ${field}[${first}]`);
    }
    seen.set(id, i);
    return [key.type, id, key.comment].filter((p) => p !== '').join(' ');
  });
}

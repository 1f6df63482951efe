/**
 * Fresh SSH key pairs in OpenSSH format, for the tests that give servers keys. ssh2's generator
 * now and then writes an ed25519 key whose public half lost a leading zero byte (31 bytes;
 * "Malformed OpenSSH private key" to its own parser, about 1 pair in 400): such a pair is not a
 * key at all, and the server rightly refuses it, so it is made again here.
 */
import ssh2 from 'ssh2';

export type SshKeyKind = 'ed25519' | 'rsa' | 'ecdsa';

/** A key pair: `public` is `type base64 comment` (with a newline), `private` the key file. */
export function sshKeyPair(
  kind: SshKeyKind = 'ed25519',
  opts: { readonly bits?: number; readonly comment?: string } = {},
): { public: string; private: string } {
  for (;;) {
    const pair =
      kind === 'ed25519'
        ? ssh2.utils.generateKeyPairSync('ed25519', { comment: opts.comment })
        : ssh2.utils.generateKeyPairSync(kind, {
            bits: opts.bits ?? (kind === 'rsa' ? 2048 : 256),
            comment: opts.comment,
          });
    const whole = [pair.private, pair.public].every((k) => !(ssh2.utils.parseKey(k) instanceof Error));
    if (whole) return pair;
  }
}

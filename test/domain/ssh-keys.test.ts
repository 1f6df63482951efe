import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ApiError } from '../../src/domain/errors.ts';
import { checkSshKeys, sshKeyFingerprint } from '../../src/domain/ssh-keys.ts';
import { type SshKeyKind, sshKeyPair } from '../helpers/ssh-key-pair.ts';

/** A fresh key pair in OpenSSH format (`ssh-... AAAA... comment`, and the private key file). */
const keyPair = (kind: SshKeyKind, opts: { bits?: number } = {}, comment = 'user@laptop') =>
  sshKeyPair(kind, { ...opts, comment });
const publicKey = (kind: SshKeyKind, opts: { bits?: number } = {}, comment?: string) =>
  keyPair(kind, opts, comment).public.trim();

/** SSH wire strings: each a uint32 length, then the bytes. */
function wire(...parts: Buffer[]): Buffer {
  return Buffer.concat(
    parts.map((p) => {
      const len = Buffer.alloc(4);
      len.writeUInt32BE(p.length);
      return Buffer.concat([len, p]);
    }),
  );
}
/** The refusal `keys` gets: its message (the check must throw ApiError invalid_ssh_key). */
function refusal(keys: string[]): string {
  try {
    checkSshKeys(keys);
  } catch (err) {
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.code, 'invalid_ssh_key');
    assert.equal(err.status, 400);
    return err.message;
  }
  assert.fail('the keys were accepted');
}

/** A DSA public key: ssh-keygen's where it can still make one, else one built from node:crypto's numbers. */
function dsaPublicKey(): string {
  const dir = mkdtempSync(join(tmpdir(), 'vrp-dsa-'));
  try {
    execFileSync('ssh-keygen', ['-q', '-t', 'dsa', '-N', '', '-C', 'old', '-f', join(dir, 'k')], {
      stdio: 'ignore',
    });
    return readFileSync(join(dir, 'k.pub'), 'utf8').trim();
  } catch {
    // No ssh-keygen, or one without DSA: p, q, g, y of a real DSA key, from its JWK-less DER.
    const { publicKey: pk } = generateKeyPairSync('dsa', { modulusLength: 1024, divisorLength: 160 });
    const der = pk.export({ type: 'spki', format: 'der' });
    const ints: Buffer[] = [];
    // Every INTEGER in the DER (p, q, g in the parameters, then y): tag 0x02, length, bytes.
    for (let i = 0; i < der.length; ) {
      const tag = der[i]!;
      let len = der[i + 1]!;
      let at = i + 2;
      if (len & 0x80) {
        const n = len & 0x7f;
        len = der.readUIntBE(at, n);
        at += n;
      }
      if (tag === 0x02) {
        ints.push(der.subarray(at, at + len));
        i = at + len;
      } else if (tag === 0x30) i = at;
      else if (tag === 0x03) i = at + 1;
      else i = at + len;
    }
    return `ssh-dss ${wire(Buffer.from('ssh-dss'), ...ints).toString('base64')} old`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('SSH public keys', () => {
  test('ed25519, RSA 2048 and 4096, ECDSA 256/384/521 are accepted and stored as `type base64 comment`', () => {
    const keys = [
      publicKey('ed25519'),
      publicKey('rsa', { bits: 2048 }),
      publicKey('rsa', { bits: 4096 }),
      publicKey('ecdsa', { bits: 256 }),
      publicKey('ecdsa', { bits: 384 }),
      publicKey('ecdsa', { bits: 521 }),
    ];
    assert.deepEqual(checkSshKeys(keys), keys);
  });

  test('spaces are normalised; a key without a comment is `type base64`', () => {
    const [type, data] = publicKey('ed25519').split(' ');
    const [type2, data2] = publicKey('ecdsa', { bits: 256 }).split(' ');
    assert.deepEqual(checkSshKeys([`  ${type}\t ${data}   my   laptop  \n`, `${type2} ${data2}`]), [
      `${type} ${data} my laptop`,
      `${type2} ${data2}`,
    ]);
  });

  test('the fingerprint is the one ssh-keygen prints: SHA256 of the blob, unpadded base64', () => {
    const key = publicKey('ed25519');
    const blob = Buffer.from(key.split(' ')[1]!, 'base64');
    const expected = `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
    assert.equal(sshKeyFingerprint(key), expected);
    assert.doesNotMatch(sshKeyFingerprint(key), /=/);
    // And the one ssh-keygen itself prints, where it is installed.
    const dir = mkdtempSync(join(tmpdir(), 'vrp-fp-'));
    try {
      const file = join(dir, 'k.pub');
      execFileSync('sh', ['-c', 'cat > "$0"', file], { input: `${key}\n` });
      const printed = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', file], { encoding: 'utf8' });
      assert.equal(printed.split(' ')[1], expected);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('an RSA key under 2048 bits is refused, naming the key and the size', () => {
    const message = refusal([publicKey('ed25519'), publicKey('ed25519'), publicKey('rsa', { bits: 1024 })]);
    assert.equal(message, 'ssh_keys[2]: an RSA key must have at least 2048 bits, this one has 1024');
  });

  test('a truncated blob is refused', () => {
    const [type, data] = publicKey('ed25519').split(' ');
    const blob = Buffer.from(data!, 'base64');
    const cut = blob.subarray(0, blob.length - 5).toString('base64');
    assert.match(refusal([`${type} ${cut}`]), /^ssh_keys\[0\]: the key data is not a valid ssh-ed25519 key/);
    const rsa = publicKey('rsa', { bits: 2048 }).split(' ');
    const rsaCut = Buffer.from(rsa[1]!, 'base64').subarray(0, 100).toString('base64');
    assert.match(refusal([`ssh-rsa ${rsaCut}`]), /^ssh_keys\[0\]: the key data is not a valid ssh-rsa key/);
  });

  test('bytes after the key are refused', () => {
    const [type, data] = publicKey('ed25519').split(' ');
    const longer = Buffer.concat([Buffer.from(data!, 'base64'), Buffer.from([1, 2, 3])]).toString('base64');
    assert.match(
      refusal([`${type} ${longer}`]),
      /^ssh_keys\[0\]: the key data is not a valid ssh-ed25519 key/,
    );
  });

  test('a type that does not match the blob is refused', () => {
    const ed = publicKey('ed25519').split(' ')[1];
    assert.equal(refusal([`ssh-rsa ${ed}`]), 'ssh_keys[0]: the key data is not a ssh-rsa key');
    const p256 = publicKey('ecdsa', { bits: 256 }).split(' ')[1];
    assert.equal(
      refusal([publicKey('ed25519'), `ecdsa-sha2-nistp384 ${p256}`]),
      'ssh_keys[1]: the key data is not a ecdsa-sha2-nistp384 key',
    );
  });

  test('a private key is refused as such, in either format', () => {
    const pair = keyPair('ed25519');
    assert.match(refusal([pair.private]), /^ssh_keys\[0\]: this is a private key/);
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = rsa.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
    assert.match(refusal([publicKey('ed25519'), pem]), /^ssh_keys\[1\]: this is a private key/);
    // Its first line alone, as a form that takes one key per line splits it.
    const firstLine = pair.private.split('\n')[0]!;
    assert.match(refusal([firstLine]), /^ssh_keys\[0\]: this is \(the start of\) a private key/);
  });

  test('11 keys are refused; 10 are accepted', () => {
    const ten = Array.from({ length: 10 }, () => publicKey('ed25519'));
    assert.equal(checkSshKeys(ten).length, 10);
    assert.equal(refusal([...ten, publicKey('ed25519')]), 'ssh_keys: at most 10 keys, got 11');
  });

  test('the same key twice is refused, even with another comment', () => {
    const key = publicKey('ed25519');
    const [type, data] = key.split(' ');
    assert.equal(
      refusal([key, publicKey('ed25519'), `${type} ${data} other comment`]),
      'ssh_keys[2]: the same key as ssh_keys[0]',
    );
  });

  test('a DSA key is refused', () => {
    const dsa = dsaPublicKey();
    assert.match(dsa, /^ssh-dss /);
    assert.match(refusal([dsa]), /^ssh_keys\[0\]: DSA keys \(ssh-dss\) are not accepted/);
  });

  test('other text is refused: empty, garbage, bad base64, two keys in one entry, unknown types, certificates', () => {
    const key = publicKey('ed25519');
    const [type, data] = key.split(' ');
    const cases: [string, RegExp][] = [
      ['', /empty/],
      ['   ', /empty/],
      ['hello world', /the key type "hello" is not accepted/],
      [`${type}`, /not valid base64/],
      [`${type} !!!notbase64`, /not valid base64/],
      [`${type} ${data!.slice(0, -1)}`, /not valid base64|not a valid/],
      [`${key}\n${publicKey('ed25519')}`, /one key per entry/],
      [`ssh-ed25519-cert-v01@openssh.com ${data}`, /is not accepted/],
      [`command="ls" ${key}`, /is not accepted/],
      [`${key}\u0007`, /control characters/],
      [`sk-ssh-ed25519@openssh.com ${data}`, /is not accepted/],
    ];
    for (const [text, expected] of cases) {
      assert.match(
        refusal([text]),
        new RegExp(`^ssh_keys\\[0\\]: .*(${expected.source})`),
        JSON.stringify(text),
      );
    }
  });

  test('no keys is fine', () => {
    assert.deepEqual(checkSshKeys([]), []);
  });
});

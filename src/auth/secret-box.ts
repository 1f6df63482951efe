import { createCipheriv, createDecipheriv, createSecretKey } from 'node:crypto';
import type { SecretBox } from '../domain/secret-box.ts';
import { randomPoolBytes } from '../random-pool.ts';

/** Encrypts short secrets (server passwords) with AES-256-GCM: `v1.iv.tag.ciphertext`, base64url. */
export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error('secret box key must be 32 bytes');
  // One KeyObject: building it from raw bytes on every call costs more than the cipher.
  const keyObject = createSecretKey(key);
  return {
    seal(plain) {
      const iv = randomPoolBytes(12);
      const cipher = createCipheriv('aes-256-gcm', keyObject, iv);
      const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return [
        'v1',
        iv.toString('base64url'),
        cipher.getAuthTag().toString('base64url'),
        data.toString('base64url'),
      ].join('.');
    },
    open(sealed) {
      const [version, iv, tag, data] = sealed.split('.');
      if (version !== 'v1' || !iv || !tag || data === undefined) throw new Error('not a sealed secret');
      const decipher = createDecipheriv('aes-256-gcm', keyObject, Buffer.from(iv, 'base64url'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString(
        'utf8',
      );
    },
  };
}

/**
 * A real SMTP receiver on 127.0.0.1 for tests (smtp-server): STARTTLS with a throwaway
 * self-signed certificate made here by openssl, AUTH only after STARTTLS (smtp-server's default),
 * one user and password, and every message kept as it arrived.
 */
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SMTPServer } from 'smtp-server';
import { WAIT_MS } from './budget.ts';

export interface Mail {
  readonly from: string;
  readonly to: readonly string[];
  /** Whether the message came over TLS (after STARTTLS). */
  readonly secure: boolean;
  readonly user: string | undefined;
  readonly subject: string;
  /** The text body, quoted-printable decoded. */
  readonly text: string;
}

export interface SmtpReceiver {
  readonly port: number;
  readonly mails: Mail[];
  /** The file of the certificate to trust (VRP_SMTP_TLS_CA). */
  readonly caFile: string;
  waitFor(n: number): Promise<Mail[]>;
  /** Settles when the next message's data has arrived (before its answer, which `holdData` may hold). */
  nextData(): Promise<void>;
  close(): Promise<void>;
}

export const SMTP_USER = 'vrp';
export const SMTP_PASSWORD = 's3cret-p@ss';

/** A self-signed certificate for 127.0.0.1 and localhost, in a new directory. */
export function throwawayCertificate(): { dir: string; key: string; cert: string; caFile: string } {
  const dir = mkdtempSync(join(tmpdir(), 'vrp-smtp-'));
  const keyFile = join(dir, 'key.pem');
  const caFile = join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-keyout',
      keyFile,
      '-out',
      caFile,
    ],
    { stdio: 'ignore' },
  );
  return { dir, key: readFileSync(keyFile, 'utf8'), cert: readFileSync(caFile, 'utf8'), caFile };
}

function decodeQuotedPrintable(text: string): string {
  return text
    .replace(/=\r?\n/g, '')
    .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
}

function parse(raw: string): { subject: string; text: string } {
  const split = raw.indexOf('\r\n\r\n');
  const head = raw.slice(0, split).replace(/\r\n[ \t]+/g, ' ');
  const body = raw.slice(split + 4);
  const subject = /^Subject: (.*)$/m.exec(head)?.[1] ?? '';
  const qp = /^Content-Transfer-Encoding: quoted-printable/im.test(head);
  return { subject, text: qp ? decodeQuotedPrintable(body) : body };
}

export type Certificate = ReturnType<typeof throwawayCertificate>;

/** Starts the receiver on `port` (0: any free one), with `cert` (a new one unless given; removed on close). */
export async function startSmtpReceiver(
  options: {
    port?: number;
    cert?: Certificate;
    /** Each message's answer waits for this (a server slow to take a message); the receiver emits 'data' when one arrives. */
    holdData?: Promise<void>;
  } = {},
): Promise<SmtpReceiver> {
  const port = options.port ?? 0;
  const cert = options.cert ?? throwawayCertificate();
  const mails: Mail[] = [];
  const server = new SMTPServer({
    secure: false,
    key: cert.key,
    cert: cert.cert,
    logger: false,
    authMethods: ['PLAIN', 'LOGIN'],
    onAuth(auth, _session, callback) {
      if (auth.username === SMTP_USER && auth.password === SMTP_PASSWORD)
        callback(null, { user: auth.username });
      else callback(new Error('Invalid username or password'));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', async () => {
        server.emit('data');
        await options.holdData;
        const { subject, text } = parse(Buffer.concat(chunks).toString('utf8'));
        const from = session.envelope.mailFrom;
        mails.push({
          from: from === false ? '' : from.address,
          to: session.envelope.rcptTo.map((r) => r.address),
          secure: session.secure,
          user: typeof session.user === 'string' ? session.user : undefined,
          subject,
          text,
        });
        server.emit('mail');
        callback();
      });
    },
  });
  server.listen(port, '127.0.0.1');
  await once(server.server, 'listening');
  const address = server.server.address() as AddressInfo;
  return {
    port: address.port,
    mails,
    caFile: cert.caFile,
    async waitFor(n) {
      if (mails.length >= n) return mails;
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          server.off('mail', check);
          reject(new Error(`waited for ${n} mails, got ${mails.length}`));
        }, WAIT_MS);
        function check() {
          if (mails.length < n) return;
          clearTimeout(timer);
          server.off('mail', check);
          resolve();
        }
        server.on('mail', check);
      });
      return mails;
    },
    async nextData() {
      await once(server, 'data');
    },
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(cert.dir, { recursive: true, force: true });
    },
  };
}

import type { Transporter } from 'nodemailer';
import type { SmtpConfig } from '../config.ts';
import { messageOf } from '../domain/errors.ts';

/** What the notifications' flusher needs of an email sender. */
export interface MailSender {
  /** Sends one message to the recipients; rejects with an error whose message holds no secret. */
  send(mail: { readonly subject: string; readonly text: string }): Promise<void>;
  close(): void;
}

/** How long a connection, the greeting and any quiet spell of an SMTP exchange may take. */
const SMTP_TIMEOUT_MS = 10_000;

/**
 * An email sender through the SMTP server of the settings (Nodemailer): STARTTLS required on
 * smtp:// (no mail or password crosses in clear), TLS from the start on smtps://, the server's
 * certificate checked against the system's CAs and VRP_SMTP_TLS_CA. Errors are rewritten so that
 * the password never reaches a log or the store. Nodemailer is loaded with the first message, not
 * with the process (bench/FINDINGS.md, "Memory at rest").
 */
export function createSmtpMailer(smtp: SmtpConfig, from: string, to: readonly string[]): MailSender {
  const options = {
    host: smtp.host,
    port: smtp.port,
    secure: smtp.implicitTls,
    requireTLS: !smtp.implicitTls,
    ...(smtp.user !== undefined && { auth: { user: smtp.user, pass: smtp.password ?? '' } }),
    ...(smtp.ca !== undefined && { tls: { ca: smtp.ca } }),
    connectionTimeout: SMTP_TIMEOUT_MS,
    greetingTimeout: SMTP_TIMEOUT_MS,
    socketTimeout: SMTP_TIMEOUT_MS * 3,
    disableFileAccess: true,
    disableUrlAccess: true,
  };
  let transport: Promise<Transporter> | undefined;
  const redact = (text: string) => (smtp.password ? text.replaceAll(smtp.password, '***') : text);
  return {
    async send(mail) {
      try {
        transport ??= import('nodemailer').then(({ default: nodemailer }) =>
          nodemailer.createTransport(options),
        );
        await (await transport).sendMail({ from, to: [...to], subject: mail.subject, text: mail.text });
      } catch (err) {
        const message = messageOf(err);
        throw new Error(`SMTP ${smtp.host}:${smtp.port}: ${redact(message)}`);
      }
    },
    close() {
      void transport?.then((t) => t.close());
    },
  };
}

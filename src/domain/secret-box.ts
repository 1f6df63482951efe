/**
 * Seals and opens short secrets (server passwords, webhook secrets) stored in the database. The
 * store, the jobs and the webhook sender hold one; auth/secret-box.ts makes it (AES-256-GCM).
 */
export interface SecretBox {
  seal(plain: string): string;
  open(sealed: string): string;
}

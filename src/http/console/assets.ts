import { readFileSync } from 'node:fs';
import type { App } from '../app-type.ts';

const TYPES = {
  'console.css': 'text/css; charset=utf-8',
  'console.js': 'text/javascript; charset=utf-8',
  'favicon.svg': 'image/svg+xml',
} as const;

/**
 * The console's style sheet, script and icon, from ./assets/, read once at start. They are all it
 * loads: nothing comes from another server (the Content-Security-Policy says so to the browser).
 */
export function registerConsoleAssets(app: App): void {
  for (const [name, type] of Object.entries(TYPES)) {
    const body = readFileSync(new URL(`./assets/${name}`, import.meta.url));
    app.get(`/assets/${name}`, async (_request, reply) =>
      reply.type(type).header('cache-control', 'public, max-age=300').send(body),
    );
  }
}

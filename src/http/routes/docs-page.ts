import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import getAbsoluteFSPath from 'swagger-ui-dist/absolute-path.js';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { ApiError } from '../../domain/errors.ts';
import type { App } from '../app-type.ts';
import { BASE } from '../base-path.ts';
import { registerDocumentRoute } from '../document-route.ts';
import { DOCUMENT_ONLY } from '../schemas/common.ts';
import { securityHeaders } from '../security-headers.ts';

/** Where the reference page lives, and the document it shows. */
const DOCS_PATH = `${BASE}/docs`;
const DOCUMENT_PATH = `${BASE}/openapi.json`;

/**
 * Everything the page loads comes from this server: scripts and styles from its own files
 * only (no inline script: the settings are a file too). Swagger UI's stylesheet draws its
 * icons as `data:` images, so images may be those; it fetches the document and sends
 * "Try it out" requests to this server only (`validatorUrl: null` keeps it from asking an
 * online validator about the document). The page's other headers are the console's
 * (../security-headers.ts).
 */
export const DOCS_CSP = {
  'default-src': ["'none'"],
  'script-src': ["'self'"],
  'style-src': ["'self'"],
  'img-src': ["'self'", 'data:'],
  'connect-src': ["'self'"],
  'base-uri': ["'none'"],
  'form-action': ["'none'"],
  'frame-ancestors': ["'none'"],
} as const;

const setDocsHeaders = securityHeaders(DOCS_CSP);

const SETTINGS = `window.ui = SwaggerUIBundle({
  url: ${JSON.stringify(DOCUMENT_PATH)},
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
});
`;

const PAGE = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Virtual Server Reseller Provisioning API: reference</title>
<link rel="stylesheet" href="${DOCS_PATH}/swagger-ui.css">
<link rel="icon" type="image/png" href="${DOCS_PATH}/favicon-32x32.png" sizes="32x32">
<link rel="icon" type="image/png" href="${DOCS_PATH}/favicon-16x16.png" sizes="16x16">
</head>
<body>
<div id="swagger-ui"></div>
<script src="${DOCS_PATH}/swagger-ui-bundle.js"></script>
<script src="${DOCS_PATH}/settings.js"></script>
</body>
</html>
`;

/** The files the page loads, by name, with their media type; `settings.js` is ours. */
const FILES: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png',
  'settings.js': 'text/javascript; charset=utf-8',
};

// swagger-ui-dist's files never change while the process runs: read once, on first use.
const files = new Map<string, Promise<Buffer>>();
function fileOf(name: string): Promise<Buffer> {
  let file = files.get(name);
  if (!file) {
    file =
      name === 'settings.js'
        ? Promise.resolve(Buffer.from(SETTINGS))
        : readFile(join(getAbsoluteFSPath(), name));
    files.set(name, file);
  }
  return file;
}

const text = (mediaType: string, description: string) => ({
  description,
  content: { [mediaType]: { schema: Type.String() } },
});
const tags = ['Operations'];

/**
 * The OpenAPI document of this server's routes and an interactive reference of it (Swagger UI,
 * served from node_modules: nothing is loaded from elsewhere). No token needed. The answers are
 * sent as they are, so they are declared for the document only (`responses`).
 */
export function registerDocsRoutes(app: App, _ctx: AppContext): void {
  // The operator API has a document of its own (OPS/openapi.json).
  registerDocumentRoute(app, {
    path: DOCUMENT_PATH,
    kind: 'reseller',
    operationId: 'openapiDocument',
    tags,
    description: 'The OpenAPI 3.1 document of this server, made from its routes (docs/openapi.json).',
  });

  const page = {
    schema: {
      operationId: 'reference',
      tags,
      summary: 'The API reference',
      description: 'An interactive reference of this document (Swagger UI), served by this server.',
      responses: { 200: text('text/html', 'The page; its scripts and styles are under /docs/') },
    },
  };
  app.get(DOCS_PATH, page, async (request, reply) => {
    setDocsHeaders(request, reply);
    return reply.type('text/html; charset=utf-8').send(PAGE);
  });

  app.get(
    `${DOCS_PATH}/:file`,
    {
      schema: {
        operationId: 'referenceFile',
        tags,
        summary: 'A file of the API reference',
        description: 'The scripts, styles and icons the reference page loads.',
        params: Type.Object({
          file: Type.String({ maxLength: 64, [DOCUMENT_ONLY]: { enum: Object.keys(FILES) } }),
        }),
        responses: {
          200: {
            description: 'The file',
            content: {
              'text/css': { schema: Type.String() },
              'text/javascript': { schema: Type.String() },
              'image/png': { schema: Type.String({ contentMediaType: 'image/png' }) },
            },
          },
        },
      },
    },
    async (request, reply) => {
      const name = request.params.file;
      const type = Object.hasOwn(FILES, name) ? FILES[name] : undefined;
      if (!type) throw new ApiError('not_found', `No file ${name} in the reference`);
      return reply
        .type(type)
        .header('cache-control', 'public, max-age=3600')
        .header('x-content-type-options', 'nosniff')
        .send(await fileOf(name));
    },
  );

  // The short address of the page.
  app.get(
    '/docs',
    {
      schema: {
        operationId: 'referenceShortcut',
        tags,
        summary: 'Redirects to the API reference',
        description: `Redirects to ${DOCS_PATH}.`,
        responses: {
          302: {
            description: 'To the reference page',
            headers: { Location: { schema: { type: 'string', const: DOCS_PATH } } },
          },
        },
      },
    },
    async (_request, reply) => reply.redirect(DOCS_PATH, 302),
  );
}

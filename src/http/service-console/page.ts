import type { ConsoleKind } from '../../drivers/driver.ts';
import { SERVICE_CONSOLE } from '../base-path.ts';
import { type Html, html } from '../console/html.ts';

const TAB_NAMES: Record<ConsoleKind, string> = { serial: 'Serial console', vnc: 'Screen' };

/**
 * The console page: a tab per console the server has (the serial one first), its terminal or
 * screen filled by ./assets/service-console.js over the WebSockets under SERVICE_CONSOLE/ws/.
 * No inline script or style: the page's Content-Security-Policy allows neither.
 */
export function consolePage(o: {
  assets: string;
  domain: string;
  kinds: readonly ConsoleKind[];
  sessionUntil: string;
}): Html {
  const kinds = o.kinds.length > 0 ? o.kinds : (['serial'] as const);
  return html`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Console: ${o.domain}</title>
<link rel="stylesheet" href="${o.assets}/xterm.css">
<link rel="stylesheet" href="${o.assets}/service-console.css">
<script type="module" src="${o.assets}/service-console.js"></script>
</head>
<body data-ws="${SERVICE_CONSOLE}/ws" data-session-until="${o.sessionUntil}">
<header>
<h1>${o.domain}</h1>
<nav role="tablist" aria-label="Consoles">
${kinds.map(
  (k, i) =>
    html`<button type="button" role="tab" id="tab-${k}" data-kind="${k}" aria-controls="pane-${k}" aria-selected="${i === 0 ? 'true' : 'false'}">${TAB_NAMES[k]}</button>`,
)}
</nav>
<p id="status" role="status">Connecting…</p>
</header>
<main>
${kinds.map(
  (k, i) =>
    html`<section class="pane" id="pane-${k}" role="tabpanel" aria-labelledby="tab-${k}"${i === 0 ? '' : html` hidden`}></section>`,
)}
</main>
</body>
</html>
`;
}

/** The page a link that cannot open answers (used, expired, unknown, or a server without a console now). */
export function refusalPage(title: string, text: string): Html {
  return html`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
</head>
<body>
<h1>${title}</h1>
<p role="alert">${text}</p>
</body>
</html>
`;
}

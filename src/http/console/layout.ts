import { type Role, roleAllows } from '../../domain/roles.ts';
import { CONSOLE } from '../base-path.ts';
import { type Html, html } from './html.ts';

/**
 * The pages of the console's navigation, in its order, each with what the operator's role must
 * allow to see it (domain/roles.ts): a link the role cannot use is not shown. Every page reads;
 * its forms are shown only to the roles that may use them.
 */
const NAV = [
  ['overview', 'Overview', `${CONSOLE}/`, 'read'],
  ['services', 'Services', `${CONSOLE}/services`, 'read'],
  ['jobs', 'Jobs', `${CONSOLE}/jobs`, 'read'],
  ['resellers', 'Resellers', `${CONSOLE}/resellers`, 'read'],
  ['hosts', 'Hosts', `${CONSOLE}/hosts`, 'read'],
  ['ip-pools', 'Address pools', `${CONSOLE}/ip-pools`, 'read'],
  ['catalog', 'Catalogue', `${CONSOLE}/catalog`, 'read'],
  ['usage', 'Usage', `${CONSOLE}/usage`, 'read'],
  ['audit', 'Audit', `${CONSOLE}/audit`, 'read'],
  ['notifications', 'Notifications', `${CONSOLE}/notifications`, 'read'],
] as const;

export type Section = (typeof NAV)[number][0];

/** A message shown once at the top of the next page (after a form's redirect). */
export interface Flash {
  readonly kind: 'ok' | 'error';
  readonly text: string;
}

export interface PageOptions {
  readonly title: string;
  readonly body: Html;
  /** The navigation entry to mark current; none on the login page. */
  readonly section?: Section;
  /** The signed-in operator and the CSRF token for the logout form; absent when signed out. */
  readonly operator?: { readonly name: string; readonly role: Role; readonly csrf: string };
  readonly flash?: Flash | undefined;
}

/** A whole console page: the same head, skip link, navigation and message area on every page. */
export function page(o: PageOptions): Html {
  const nav =
    o.operator &&
    html`<nav aria-label="Console">
      <ul>
        ${NAV.filter(([, , , needs]) => o.operator && roleAllows(o.operator.role, needs)).map(
          ([key, label, href]) =>
            html`<li><a href="${href}"${o.section === key ? html` aria-current="page"` : ''}>${label}</a></li>`,
        )}
      </ul>
      <form method="post" action="${CONSOLE}/logout" class="logout">
        <input type="hidden" name="_csrf" value="${o.operator.csrf}">
        <a class="who" href="${CONSOLE}/two-factor" title="Two-factor login">${o.operator.name}</a> <span class="role">${o.operator.role}</span>
        <button type="submit">Log out</button>
      </form>
    </nav>`;
  const flash =
    o.flash &&
    html`<p class="flash flash-${o.flash.kind}" role="${o.flash.kind === 'error' ? 'alert' : 'status'}">${o.flash.text}</p>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${o.title} · VPS provider console</title>
<link rel="stylesheet" href="${CONSOLE}/assets/console.css">
<link rel="icon" href="${CONSOLE}/assets/favicon.svg" type="image/svg+xml">
<script src="${CONSOLE}/assets/console.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header><a class="brand" href="${CONSOLE}/">VPS provider console</a>${nav}</header>
<main id="main" tabindex="-1">
<h1>${o.title}</h1>
${flash}
${o.body}
</main>
</body>
</html>
`;
}

import type { FastifyReply } from 'fastify';
import { type ConsoleCall, consolePath, csrfField, sendPage } from './console-router.ts';
import { type Html, html } from './html.ts';
import type { Section } from './layout.ts';

/**
 * A form of one button that POSTs to a console path: an operation on one object (stop a server,
 * retry a job). `confirm` makes console.js ask first (destructive operations); `back` is the page
 * to return to afterwards (see backOf); `name` is the button's accessible name when its visible
 * text alone would be ambiguous in a list (it starts with the visible text).
 */
export function buttonForm(o: {
  readonly csrf: string;
  readonly action: string;
  readonly label: string;
  readonly name?: string;
  readonly confirm?: string;
  readonly kind?: 'danger' | 'secondary';
  readonly back?: string;
}): Html {
  return html`<form method="post" action="${o.action}" class="inline"${o.confirm ? html` data-confirm="${o.confirm}"` : ''}>
${csrfField(o.csrf)}${o.back ? html`<input type="hidden" name="back" value="${o.back}">` : ''}
<button type="submit"${o.kind ? html` class="${o.kind}"` : ''}${o.name ? html` aria-label="${o.name}"` : ''}>${o.label}</button>
</form>`;
}

/**
 * Where a form sends the browser when it is done: the page named by its `back` field if that is a
 * console page (never another site: consolePath checks it), else `fallback`.
 */
export function backOf(call: ConsoleCall, fallback: string): string {
  return consolePath(call.field('back'), call.request.host) ?? fallback;
}

/** A parameter of the console path, ready to be put in an operator API path (the API validates it). */
export function pathParam(call: ConsoleCall, name: string): string {
  return encodeURIComponent(call.param(name));
}

/** A labelled drop-down of a GET filter form; `any` is the label of the empty choice. */
export function selectField(o: {
  readonly id: string;
  readonly label: string;
  readonly any: string;
  readonly options: readonly (readonly [value: string, text: string])[];
  readonly selected: string | undefined;
}): Html {
  return html`<div><label for="${o.id}">${o.label}</label>
<select id="${o.id}" name="${o.id}">
<option value="">${o.any}</option>
${o.options.map(([value, text]) => html`<option value="${value}"${value === o.selected ? html` selected` : ''}>${text}</option>`)}
</select></div>`;
}

/**
 * The page that shows a new secret, once: it is in this answer only (no-store, as every console
 * answer), never in a cookie, a link or a flash. `facts` are the lines shown, each with the id
 * of its value's element; `back` the link under them.
 */
export function secretPage(
  call: ConsoleCall,
  o: {
    readonly title: string;
    readonly section: Section;
    readonly facts: readonly (readonly [label: string, value: string, id: string])[];
    readonly back: { readonly href: string; readonly text: string };
  },
): FastifyReply {
  return sendPage(
    call.reply,
    call.render({
      title: o.title,
      section: o.section,
      body: html`<p class="flash ok" role="status">Copy the secret now: it is shown only on this page, and cannot be shown again.</p>
<dl class="facts">
${o.facts.map(
  ([label, value, id]) => html`  <dt>${label}</dt><dd class="mono" id="${id}">${value}</dd>
`,
)}</dl>
<p><a href="${o.back.href}">← ${o.back.text}</a></p>`,
    }),
  );
}

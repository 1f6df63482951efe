/**
 * HTML built from template literals, escaped by default: `html\`<td>${name}</td>\`` escapes
 * `name`, so no text a reseller or an operator typed (a domain name, a reseller's name) can
 * become markup. Only Html values (another html`` result, or raw() of markup we wrote) pass
 * through as they are; arrays are joined, and null, undefined and false render nothing.
 */
const HTML = Symbol('html');

export interface Html {
  readonly [HTML]: true;
  readonly text: string;
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

/** Markup that is already safe: only for constants of the code, never for data. */
export function raw(text: string): Html {
  return { [HTML]: true, text };
}

export function isHtml(value: unknown): value is Html {
  return typeof value === 'object' && value !== null && HTML in value;
}

function render(value: unknown): string {
  if (value === null || value === undefined || value === false) return '';
  if (isHtml(value)) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let text = strings[0] ?? '';
  for (let i = 0; i < values.length; i++) text += render(values[i]) + (strings[i + 1] ?? '');
  return raw(text);
}

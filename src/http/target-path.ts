/** The path of a request target, also in absolute form (`http://host/path?query`), without its query. */
export function targetPath(url: string): string {
  const path = url.replace(/^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/, '').split('?')[0] ?? '';
  return path === '' ? '/' : path;
}

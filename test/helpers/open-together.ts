/**
 * Opens things at once (a browser and a test app) for a `before` hook. If one fails to open,
 * those that did are closed before the failure is thrown: a hook that fails leaves nothing
 * running that would keep its lane from ending.
 */
interface Closable {
  close(): Promise<void>;
}

export async function openTogether<T extends readonly Promise<Closable>[] | []>(
  opening: T,
): Promise<{ -readonly [P in keyof T]: Awaited<T[P]> }> {
  const settled = await Promise.allSettled<Promise<Closable>>(opening);
  const opened = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  for (const r of settled) {
    if (r.status === 'rejected') {
      await Promise.allSettled(opened.map((o) => o.close()));
      throw r.reason;
    }
  }
  return opened as { -readonly [P in keyof T]: Awaited<T[P]> };
}

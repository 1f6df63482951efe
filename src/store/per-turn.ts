/**
 * What is added in one turn of the event loop, handed over together at the turn's end
 * (setImmediate: after this turn's I/O callbacks, so everything the turn's requests and answers
 * added is there), one list per key.
 */
export function perTurn<K extends object, T>(flush: (key: K, items: T[]) => void): (key: K, item: T) => void {
  const waitingOf = new WeakMap<K, T[]>();
  return (key, item) => {
    let waiting = waitingOf.get(key);
    if (!waiting) {
      waiting = [];
      waitingOf.set(key, waiting);
    }
    const list = waiting;
    if (list.length === 0) setImmediate(() => flush(key, list.splice(0)));
    list.push(item);
  };
}

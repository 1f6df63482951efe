/**
 * Resolves at the end of this turn of the event loop (setImmediate: after the turn's I/O
 * callbacks), the same promise for every caller of the turn: what each request does after
 * awaiting it runs together with the others', one request after another, and their answers are
 * written one after another.
 *
 * For a route whose answer is costly to make and that is asked many times a second (a service's
 * details: the password's open, a row of 45 columns, an answer of ~900 bytes). Made one by one,
 * between the reads, handlers and log lines of the turn's other requests, each answer's code runs
 * with cold caches (the password's open takes ~10 µs so, ~4 µs in a row), and each answer's write
 * wakes the client on its own (a wake-up of a task asleep on the other core: ~10 µs of the
 * writer's CPU on a virtual machine). Gathered at the turn's end, the opens run warm and the
 * client is woken once for the lot. A request waits at most for the rest of its turn. Measured in
 * bench/FINDINGS.md ("A service's details made at the end of the loop's turn"), with why the
 * cheap routes do not gather.
 */
let turn: Promise<void> | undefined;

function endTurn(resolve: () => void): void {
  turn = undefined;
  resolve();
}

export function turnEnd(): Promise<void> {
  turn ??= new Promise<void>((resolve) => setImmediate(endTurn, resolve));
  return turn;
}

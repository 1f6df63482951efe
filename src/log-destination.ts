import { writeSync } from 'node:fs';
import { type DestinationStream, destination } from 'pino';

/** The process's log destination: what pino writes its lines to. */
export interface LogDestination extends DestinationStream {
  /**
   * Resolves once every line given so far has been written (at most `waitMs`: a destination that
   * no longer takes lines must not hold a shutdown up).
   */
  drain(waitMs?: number): Promise<void>;
}

/**
 * The lines of one turn of the event loop, handed to pino's asynchronous destination (sonic-boom,
 * on the file descriptor `fd`) as one write at the end of the turn.
 *
 * Why not each line as pino gives it: sonic-boom measures the UTF-8 length of all the text it
 * still holds on every write (up to 16 KiB while a write of its own is under way), so under load
 * each line paid for a walk of the lines before it; that was the largest part of an access line's
 * cost (bench/FINDINGS.md, "The access line's write"). Handed over once per turn, the measure is
 * paid once for all the turn's lines. sonic-boom still does the writes, retries and partial
 * writes, and a line is never held past the end of its turn. (The store's perTurn gathers a
 * turn's items the same way, but keeps them to itself until the turn ends; the exit below needs
 * the turn's lines at once.)
 *
 * At exit (process.exit, an uncaught exception), after pino's exit handler has written what
 * sonic-boom held, the lines of the last turn are written synchronously. A write sonic-boom has
 * under way then cannot be waited for (as before this batch): its lines may land after the
 * last ones. A shutdown that can wait calls `drain` first (the last shutdown step, src/main.ts),
 * and then they are all written in order.
 */
export function logDestination(fd: number): LogDestination {
  const sonic = destination({ dest: fd, sync: false });
  let lines: string[] = [];
  let scheduled = false;
  /** Whether sonic-boom holds lines it has not written yet (until its `drain`). */
  let busy = false;
  const drained: (() => void)[] = [];
  const settle = () => {
    busy = false;
    for (const resolve of drained.splice(0)) resolve();
  };
  sonic.on('drain', settle);
  sonic.on('close', settle);
  const take = (): string | undefined => {
    if (lines.length === 0) return undefined;
    const chunk = lines.length === 1 ? lines[0] : lines.join('');
    lines = [];
    return chunk;
  };
  const handOver = (): void => {
    scheduled = false;
    const chunk = take();
    if (chunk === undefined) return;
    busy = true;
    try {
      sonic.write(chunk);
    } catch {
      // Ended (pino ends it when the event loop has nothing left to do, just before the process
      // exits): the line is dropped where a direct write to it would have thrown.
      settle();
    }
  };
  process.on('exit', () => {
    const chunk = take();
    if (chunk === undefined) return;
    const bytes = Buffer.from(chunk);
    // A pipe another part of the process made non-blocking may be full for a moment: it is given
    // up to a second, in steps of 10 ms (the event loop is gone; this thread can only sleep).
    const pause = new Int32Array(new SharedArrayBuffer(4));
    for (let at = 0, tries = 0; at < bytes.length; ) {
      try {
        at += writeSync(fd, bytes, at);
      } catch (err) {
        const again = err instanceof Error && 'code' in err && err.code === 'EAGAIN';
        if (!again || ++tries > 100) return;
        Atomics.wait(pause, 0, 0, 10);
      }
    }
  });
  return {
    write(line: string): void {
      lines.push(line);
      if (!scheduled) {
        scheduled = true;
        setImmediate(handOver);
      }
    },
    drain(waitMs = 2000) {
      handOver();
      if (!busy) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, waitMs);
        timer.unref();
        drained.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}

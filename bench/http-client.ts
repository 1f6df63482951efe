/**
 * The HTTP client of the bench's order -> running driver: node:http over a keep-alive agent.
 *
 * The driver runs in the bench's own process, on the same two cores as the server (and
 * PostgreSQL). Measured alone against the bare floor (POST with a JSON body, 32 at once), `fetch`
 * spent 450-740 µs of the client's CPU per request and this 145-250 µs (bench/FINDINGS.md, "The
 * bench's own share of order -> running"): with two requests per service, fetch alone took the
 * better part of a core from the machine the server is measured on.
 */
import http from 'node:http';

export interface Answer {
  readonly status: number;
  readonly ok: boolean;
  readonly text: string;
}

export interface BenchClient {
  /** POST `body` (JSON text, or none) to `url`; the answer's status and text. */
  post(url: string, headers: Record<string, string>, body?: string): Promise<Answer>;
  close(): void;
}

/** A client with at most `sockets` connections, kept open between requests. */
export function benchClient(sockets: number): BenchClient {
  const agent = new http.Agent({ keepAlive: true, maxSockets: sockets });
  return {
    post: (url, headers, body) =>
      new Promise((resolve, reject) => {
        const req = http.request(
          url,
          {
            method: 'POST',
            agent,
            headers: { ...headers, 'content-length': body === undefined ? 0 : Buffer.byteLength(body) },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (chunk: Buffer) => chunks.push(chunk));
            res.on('error', reject);
            res.on('end', () => {
              const status = res.statusCode ?? 0;
              resolve({
                status,
                ok: status >= 200 && status < 300,
                text: Buffer.concat(chunks).toString('utf8'),
              });
            });
          },
        );
        req.on('error', reject);
        req.end(body);
      }),
    close: () => agent.destroy(),
  };
}

/**
 * A throwaway S3-compatible server for the S3 backup store's tests: s3rver, in this process, on
 * 127.0.0.1 and a port the system picks, keeping its objects in a temporary directory, with one
 * bucket. It takes s3rver's fixed credentials.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';

export interface S3Server {
  /** `http://127.0.0.1:<port>`: path-style addressing. */
  readonly endpoint: string;
  readonly bucket: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  close(): Promise<void>;
}

export async function startS3(bucket = 'vrp-test-backups'): Promise<S3Server> {
  const directory = mkdtempSync(join(tmpdir(), 'vrp-s3-'));
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: [{ name: bucket }],
  });
  const { port } = await server.run();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket,
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    async close() {
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

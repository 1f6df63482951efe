import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { BackupStoreConfig } from '../../config.ts';
import { systemCause } from '../../expected-failure.ts';
import { type BackupStore, BackupStoreError, checkKey, storeFailure } from './store.ts';

/** The bucket and its settings as VRP_BACKUP_STORE and its settings give them, and the timeouts. */
export interface S3BackupStoreOptions extends Omit<Extract<BackupStoreConfig, { kind: 's3' }>, 'kind'> {
  /** How long a TCP connection may take (ms). */
  readonly connectTimeoutMs?: number;
  /** How long a request may wait for the server's answer (ms). */
  readonly requestTimeoutMs?: number;
  /** Attempts per request, the SDK's retries of throttling and server errors included. */
  readonly maxAttempts?: number;
  /** The size of a multipart upload's parts (at least 5 MiB, S3's smallest). */
  readonly partBytes?: number;
}

/** Parts of one upload sent at once: `queueSize * partSize` bytes are held in memory. */
const UPLOAD_QUEUE = 4;
const PART_BYTES = 8 * 1024 * 1024;

/**
 * `s3://bucket/prefix`: objects of an S3 bucket (AWS or an S3-compatible service). A put is a
 * multipart upload from the stream, parts sent as they fill; S3 shows the object only once
 * the upload completes, and a failed upload is aborted so that no part is left stored.
 */
export function s3BackupStore(options: S3BackupStoreOptions): BackupStore {
  const prefix = options.prefix.replace(/^\/+|\/+$/g, '');
  const description = `s3://${options.bucket}${prefix ? `/${prefix}` : ''}${options.endpoint ? ` at ${options.endpoint}` : ''}`;
  const objectKey = (key: string) => (prefix ? `${prefix}/${checkKey(key)}` : checkKey(key));
  const client = new S3Client({
    region: options.region,
    ...(options.endpoint ? { endpoint: options.endpoint } : {}),
    forcePathStyle: options.forcePathStyle,
    credentials: { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey },
    maxAttempts: options.maxAttempts ?? 3,
    // Checksums only where S3 requires them: many S3-compatible services do not take the
    // SDK's default (a CRC trailer on an aws-chunked body). The archive checks its own
    // segments with SHA-256.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: {
      connectionTimeout: options.connectTimeoutMs ?? 10_000,
      requestTimeout: options.requestTimeoutMs ?? 120_000,
      throwOnRequestTimeout: true,
    },
  });

  const fail = (what: string, err: unknown): never => {
    throw storeFailure(description, what, describeError(err, options), isMissing(err), err);
  };

  return {
    description,

    async put(key, data) {
      const Key = objectKey(key);
      let bytes = 0;
      // The source's own failure is the reason to report, not what aborting the upload said.
      let sourceError: unknown;
      async function* counted(): AsyncGenerator<Buffer> {
        try {
          for await (const chunk of data) {
            const buf: Buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
            bytes += buf.length;
            yield buf;
          }
        } catch (err) {
          sourceError = err;
          throw err;
        }
      }
      const upload = new Upload({
        client,
        params: { Bucket: options.bucket, Key, Body: Readable.from(counted()) },
        queueSize: UPLOAD_QUEUE,
        partSize: Math.max(options.partBytes ?? PART_BYTES, 5 * 1024 * 1024),
        leavePartsOnError: false,
      });
      try {
        await upload.done();
      } catch (err) {
        return fail(`cannot write ${key}`, sourceError ?? err);
      }
      return bytes;
    },

    async get(key, range) {
      try {
        const out = await client.send(
          new GetObjectCommand({
            Bucket: options.bucket,
            Key: objectKey(key),
            ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
          }),
        );
        if (!(out.Body instanceof Readable)) throw new Error('the answer has no body');
        // A service that ignored the range would hand back other bytes than those asked for.
        const answered = range ? /^bytes (\d+)-(\d+)\//.exec(out.ContentRange ?? '') : undefined;
        if (range && (!answered || Number(answered[1]) !== range.start || Number(answered[2]) > range.end)) {
          out.Body.destroy();
          throw new Error(
            `asked for bytes ${range.start}-${range.end}, the service answered ${out.ContentRange ?? 'the whole object'}`,
          );
        }
        return out.Body;
      } catch (err) {
        return fail(`cannot read ${key}`, err);
      }
    },

    async size(key) {
      try {
        const out = await client.send(new HeadObjectCommand({ Bucket: options.bucket, Key: objectKey(key) }));
        return out.ContentLength ?? 0;
      } catch (err) {
        if (isMissing(err)) return undefined;
        return fail(`cannot read ${key}`, err);
      }
    },

    // Like a directory of the local store: `a/b` lists what is under `a/b/`.
    async list(listPrefix) {
      const under = objectKey(listPrefix.replace(/\/+$/, ''));
      const strip = prefix ? prefix.length + 1 : 0;
      const keys: string[] = [];
      let token: string | undefined;
      try {
        do {
          const out = await client.send(
            new ListObjectsV2Command({
              Bucket: options.bucket,
              Prefix: `${under}/`,
              ...(token ? { ContinuationToken: token } : {}),
            }),
          );
          for (const o of out.Contents ?? []) if (o.Key) keys.push(o.Key.slice(strip));
          token = out.IsTruncated ? out.NextContinuationToken : undefined;
        } while (token);
      } catch (err) {
        return fail(`cannot list ${listPrefix}`, err);
      }
      return keys;
    },

    async delete(key) {
      try {
        // S3 answers a delete of a missing object with success.
        await client.send(new DeleteObjectCommand({ Bucket: options.bucket, Key: objectKey(key) }));
      } catch (err) {
        if (isMissing(err)) return;
        fail(`cannot delete ${key}`, err);
      }
    },

    async probe() {
      const Key = objectKey(`.probe-${randomBytes(6).toString('hex')}`);
      try {
        await client.send(new HeadBucketCommand({ Bucket: options.bucket }));
      } catch (err) {
        // Not a missing object: the store as configured is not usable (yet).
        throw new BackupStoreError(
          `Backup store ${description}: cannot reach the bucket: ${describeError(err, options)}`,
          { transient: true, cause: err },
        );
      }
      try {
        await client.send(new PutObjectCommand({ Bucket: options.bucket, Key, Body: 'vrp' }));
        await client.send(new DeleteObjectCommand({ Bucket: options.bucket, Key }));
      } catch (err) {
        fail('cannot write', err);
      }
    },

    async close() {
      client.destroy();
    },
  };
}

/** What is read of the SDK's errors (and of their cause, a system error). */
interface SdkError {
  readonly name: string | undefined;
  readonly code: string | undefined;
  readonly message: string | undefined;
  readonly status: number | undefined;
}

function prop(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? Reflect.get(value, key) : undefined;
}

function asSdkError(err: unknown): SdkError {
  const text = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const status = prop(prop(err, '$metadata'), 'httpStatusCode');
  return {
    name: text(prop(err, 'name')),
    code: text(prop(err, 'code')),
    message: text(prop(err, 'message')) ?? (typeof err === 'object' ? undefined : String(err)),
    status: typeof status === 'number' ? status : undefined,
  };
}

function isMissing(err: unknown): boolean {
  const e = asSdkError(err);
  return e.name === 'NoSuchKey' || (e.name === 'NotFound' && e.status === 404);
}

/** Why a request failed, in words; the SDK's messages never carry the secret key. */
function describeError(err: unknown, options: S3BackupStoreOptions): string {
  const e = asSdkError(err);
  const status = e.status;
  const cause = asSdkError(prop(err, 'cause'));
  const code = e.code ?? cause.code;
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ECONNRESET') return 'the connection was reset';
  if (e.name === 'TimeoutError' || code === 'ETIMEDOUT' || /timed? ?out/i.test(e.message ?? ''))
    return 'no answer in time';
  if (e.name === 'NoSuchBucket') return `no bucket ${options.bucket}`;
  if (e.name === 'InvalidAccessKeyId' || e.name === 'SignatureDoesNotMatch')
    return `the service did not accept the access key (${e.name})`;
  if (e.name === 'AccessDenied' || status === 403) return 'access denied';
  if (e.name === 'NotFound' && status === 404) return `no bucket ${options.bucket}`;
  const words = systemCause(err) ?? (code ? systemCause({ code }) : undefined);
  if (words) return words;
  const message = e.message && e.message !== 'UnknownError' ? e.message : (e.name ?? 'failed');
  return status ? `${message} (HTTP ${status})` : message;
}

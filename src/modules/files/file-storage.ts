/**
 * Owns where report and export files live: `FILE_STORAGE=local` (a directory, for the
 * single-machine quick start) or `s3` (any S3-compatible object store, so the API and the
 * worker may run on different machines). Writes and reads are streams, never whole files
 * in memory. A write is all-or-nothing: a local file is renamed into place when complete,
 * an S3 multipart upload becomes visible only when completed, so a crashed writer never
 * leaves a truncated file under the final key.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { Config } from '../../config';

export interface StoredFile {
  size: number;
}

export interface FileDownload {
  stream: Readable;
  size: number;
}

export interface FileStorage {
  readonly kind: 'local' | 's3';
  /** Streams `body` to `key`, replacing any earlier file there once the write completed. */
  write(key: string, body: Readable, contentType: string): Promise<StoredFile>;
  read(key: string): Promise<FileDownload>;
  /** Idempotent: deleting a missing file is not an error. */
  delete(key: string): Promise<void>;
  exists(key: string): Promise<boolean>;
  /** S3 with S3_PRESIGNED_DOWNLOAD_TTL_SECONDS > 0: a short-lived GET URL; otherwise undefined (stream it). */
  presignedDownloadUrl(key: string, filename: string, contentType: string): Promise<string | undefined>;
  close?(): void;
}

export class LocalFileStorage implements FileStorage {
  readonly kind = 'local';
  constructor(private readonly root: string) {}

  private pathOf(key: string): string {
    const full = path.resolve(this.root, key);
    // Keys are built by us from ids, never by clients; this only guards against a bug.
    if (!full.startsWith(path.resolve(this.root) + path.sep)) throw new Error(`file key escapes the storage root: ${key}`);
    return full;
  }

  async write(key: string, body: Readable): Promise<StoredFile> {
    const target = this.pathOf(key);
    await mkdir(path.dirname(target), { recursive: true });
    // Each attempt writes its own temporary file: a retry after a crash never appends to a partial one.
    const partial = `${target}.${randomBytes(6).toString('hex')}.partial`;
    try {
      await pipeline(body, createWriteStream(partial));
      await rename(partial, target);
    } catch (err) {
      await rm(partial, { force: true });
      throw err;
    }
    return { size: (await stat(target)).size };
  }

  async read(key: string): Promise<FileDownload> {
    const file = this.pathOf(key);
    const { size } = await stat(file);
    return { stream: createReadStream(file), size };
  }

  async delete(key: string): Promise<void> {
    await rm(this.pathOf(key), { force: true });
  }

  async exists(key: string): Promise<boolean> {
    return await stat(this.pathOf(key)).then(
      () => true,
      () => false,
    );
  }

  async presignedDownloadUrl(): Promise<undefined> {
    return undefined;
  }
}

export interface S3StorageOptions {
  bucket: string;
  region: string;
  endpoint?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  forcePathStyle: boolean;
  presignTtlSeconds: number;
}

/** Multipart part size: lib-storage buffers at most `queueSize` parts of this size per upload. */
const PART_SIZE = 8 * 1024 * 1024;

export class S3FileStorage implements FileStorage {
  readonly kind = 's3';
  private readonly client: S3Client;
  constructor(private readonly opts: S3StorageOptions) {
    this.client = new S3Client({
      region: opts.region,
      forcePathStyle: opts.forcePathStyle,
      ...(opts.endpoint ? { endpoint: opts.endpoint } : {}),
      ...(opts.accessKeyId && opts.secretAccessKey
        ? { credentials: { accessKeyId: opts.accessKeyId, secretAccessKey: opts.secretAccessKey } }
        : {}),
      // Checksums only where S3 requires them: S3-compatible servers (MinIO versions, test
      // servers) differ in their support of the SDK's default streaming trailers.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  async write(key: string, body: Readable, contentType: string): Promise<StoredFile> {
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.opts.bucket, Key: key, Body: body, ContentType: contentType },
      partSize: PART_SIZE,
      queueSize: 2,
      // A failed upload aborts its multipart upload; parts left by a killed process are
      // removed by the bucket's AbortIncompleteMultipartUpload lifecycle rule (docs/reports.md).
      leavePartsOnError: false,
    });
    await upload.done();
    const head = await this.client.send(new HeadObjectCommand({ Bucket: this.opts.bucket, Key: key }));
    return { size: head.ContentLength ?? 0 };
  }

  async read(key: string): Promise<FileDownload> {
    const out = await this.client.send(new GetObjectCommand({ Bucket: this.opts.bucket, Key: key }));
    if (!(out.Body instanceof Readable)) throw new Error('S3 GetObject returned no stream body');
    return { stream: out.Body, size: out.ContentLength ?? 0 };
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.opts.bucket, Key: key }));
  }

  async exists(key: string): Promise<boolean> {
    try {
      await this.client.send(new HeadObjectCommand({ Bucket: this.opts.bucket, Key: key }));
      return true;
    } catch (err) {
      if ((err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return false;
      throw err;
    }
  }

  async presignedDownloadUrl(key: string, filename: string, contentType: string): Promise<string | undefined> {
    if (this.opts.presignTtlSeconds === 0) return undefined;
    const command = new GetObjectCommand({
      Bucket: this.opts.bucket,
      Key: key,
      ResponseContentDisposition: `attachment; filename="${filename}"`,
      ResponseContentType: contentType,
    });
    return await getSignedUrl(this.client, command, { expiresIn: this.opts.presignTtlSeconds });
  }

  close(): void {
    this.client.destroy();
  }
}

export function createFileStorage(config: Config): FileStorage {
  if (config.FILE_STORAGE === 'local') return new LocalFileStorage(path.resolve(config.FILE_STORAGE_DIR));
  return new S3FileStorage({
    bucket: config.S3_BUCKET!,
    region: config.S3_REGION,
    forcePathStyle: config.S3_FORCE_PATH_STYLE,
    presignTtlSeconds: config.S3_PRESIGNED_DOWNLOAD_TTL_SECONDS,
    ...(config.S3_ENDPOINT ? { endpoint: config.S3_ENDPOINT } : {}),
    ...(config.S3_ACCESS_KEY_ID ? { accessKeyId: config.S3_ACCESS_KEY_ID } : {}),
    ...(config.S3_SECRET_ACCESS_KEY ? { secretAccessKey: config.S3_SECRET_ACCESS_KEY } : {}),
  });
}

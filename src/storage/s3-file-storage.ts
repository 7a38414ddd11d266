/**
 * Owns `FILE_STORAGE=s3`: report and export files in any S3-compatible object store, so the
 * API and the worker may run on different machines. A multipart upload becomes visible
 * only when completed, so a crashed writer never leaves a truncated file under the final
 * key. Loaded by `createFileStorage` (file-storage.ts) only when S3 is configured.
 */
import { Readable } from 'node:stream';
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { FileDownload, FileStorage, StoredFile } from './file-storage-contract';

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

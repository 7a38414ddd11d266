/**
 * Owns what every file storage answers (local: file-storage.ts; S3: s3-file-storage.ts),
 * apart from both so that neither imports the other.
 */
import type { Readable } from 'node:stream';

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

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
import type { Config } from '../config';
import type { FileDownload, FileStorage, StoredFile } from './file-storage-contract';

export type { FileDownload, FileStorage, StoredFile } from './file-storage-contract';

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

export function createFileStorage(config: Config): FileStorage {
  if (config.FILE_STORAGE === 'local') return new LocalFileStorage(path.resolve(config.FILE_STORAGE_DIR));
  // Loaded only here: the AWS SDK is a large import graph that a process on local storage
  // (the quick start, every test file) never needs.
  const { S3FileStorage } = require('./s3-file-storage') as typeof import('./s3-file-storage');
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

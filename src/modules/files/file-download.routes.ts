/**
 * Owns how a download route answers a `FileHandle` (src/modules/files/file-records.ts):
 * 302 to a presigned URL, or the file streamed with Content-Type, Content-Disposition and
 * Content-Length. The export and report download routes share it and its OpenAPI words.
 */
import type { Context } from 'koa';
import { z } from '../../http/zod';
import type { FileHandle } from './file-records';

export const FILE_DESCRIPTION =
  'Streams the file with Content-Type, Content-Disposition and Content-Length; with FILE_STORAGE=s3 and ' +
  'S3_PRESIGNED_DOWNLOAD_TTL_SECONDS > 0 it answers 302 to a short-lived presigned URL instead.';

/** A downloaded file's bytes. */
export const FileBody = z.string().openapi({ format: 'binary' });

export function sendFile(ctx: Context, file: FileHandle): void {
  ctx.set(file.headers);
  if ('redirectUrl' in file) {
    ctx.status = 302;
    ctx.redirect(file.redirectUrl);
    return;
  }
  ctx.status = 200;
  ctx.type = file.contentType;
  ctx.attachment(file.filename);
  ctx.body = file.stream;
  ctx.length = file.size;
}

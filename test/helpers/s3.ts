/**
 * A local S3-compatible server for tests (s3rver: a real HTTP server speaking the S3 API,
 * files in a temporary directory), on a free port, with one bucket, and the environment
 * that points the service's S3 file storage at it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
// s3rver ships no types; its constructor options and run/close are all we use.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const S3rver = require('s3rver') as new (opts: Record<string, unknown>) => { run(): Promise<unknown>; close(): Promise<void> };
import { freePort } from './process';

export interface TestS3 {
  endpoint: string;
  bucket: string;
  /** FILE_STORAGE=s3 configuration for this server (s3rver's fixed credentials). */
  env(extra?: Record<string, string>): Record<string, string>;
  close(): Promise<void>;
}

export async function startTestS3(bucket = 'wfa-test-files'): Promise<TestS3> {
  const directory = await mkdtemp(path.join(tmpdir(), 's3rver-'));
  const port = await freePort();
  const server = new S3rver({ address: '127.0.0.1', port, silent: true, directory, configureBuckets: [{ name: bucket, configs: [] }] });
  await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    bucket,
    env: (extra = {}) => ({
      FILE_STORAGE: 's3',
      S3_ENDPOINT: endpoint,
      S3_BUCKET: bucket,
      S3_REGION: 'us-east-1',
      S3_ACCESS_KEY_ID: 'S3RVER',
      S3_SECRET_ACCESS_KEY: 'S3RVER',
      S3_FORCE_PATH_STYLE: 'true',
      ...extra,
    }),
    async close() {
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

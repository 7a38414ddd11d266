/**
 * Both file storage backends through the same interface: streamed writes of a file larger
 * than one multipart part, streamed reads, replacement, deletion, and a failed write that
 * leaves nothing under the key. S3 runs against a local S3-compatible server.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { loadConfig } from '../../src/config';
import { createFileStorage, type FileStorage, LocalFileStorage } from '../../src/storage/file-storage';
import { startTestS3, type TestS3 } from '../helpers/s3';

// Generous: a loaded machine slows the local S3 server a lot; the bound only stops a hang.
jest.setTimeout(240_000);

/**
 * `n` bytes of pseudo-random data produced chunk by chunk, never all in memory at once, in
 * 64 KiB chunks as a file stream gives them. (Chunks of 64 bytes made the S3 upload 150 000
 * small writes: 1 s alone, up to a minute at the end of a full run.)
 */
function generated(n: number, seed: string): { stream: () => Readable; sha256: string } {
  const block = createHash('sha512').update(seed).digest();
  const chunk = Buffer.concat(Array.from({ length: 1024 }, () => block));
  const make = function* () {
    for (let left = n; left > 0; left -= chunk.length) yield left >= chunk.length ? chunk : chunk.subarray(0, left);
  };
  const hash = createHash('sha256');
  for (const c of make()) hash.update(c);
  return { stream: () => Readable.from(make()), sha256: hash.digest('hex') };
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

function behaves(name: string, make: () => Promise<FileStorage>) {
  describe(name, () => {
    let files: FileStorage;
    beforeAll(async () => {
      files = await make();
    });

    it('streams a large file in and out, replaces it, deletes it', async () => {
      const big = generated(9 * 1024 * 1024 + 123, 'big');
      const stored = await files.write('exports/org_1/a.csv', big.stream(), 'text/csv');
      expect(stored.size).toBe(9 * 1024 * 1024 + 123);
      expect(await files.exists('exports/org_1/a.csv')).toBe(true);
      const read = await files.read('exports/org_1/a.csv');
      expect(read.size).toBe(stored.size);
      expect(sha(await buffer(read.stream))).toBe(big.sha256);

      await files.write('exports/org_1/a.csv', Readable.from([Buffer.from('second')]), 'text/csv');
      expect((await buffer((await files.read('exports/org_1/a.csv')).stream)).toString()).toBe('second');

      await files.delete('exports/org_1/a.csv');
      await files.delete('exports/org_1/a.csv');
      expect(await files.exists('exports/org_1/a.csv')).toBe(false);
    });

    it('a write whose source fails leaves no file under the key', async () => {
      const failing = new Readable({
        read() {
          this.push(randomBytes(1024));
          this.destroy(new Error('source died'));
        },
      });
      await expect(files.write('exports/org_1/broken.csv', failing, 'text/csv')).rejects.toThrow();
      expect(await files.exists('exports/org_1/broken.csv')).toBe(false);
    });
  });
}

let dir: string;
let s3: TestS3;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'wfa-files-'));
  s3 = await startTestS3();
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await s3.close();
});

behaves('local storage', async () => createFileStorage(loadConfig({ FILE_STORAGE_DIR: dir })));
behaves('S3 storage', async () => createFileStorage(loadConfig(s3.env())));

it('local storage keeps no partial files after writes', async () => {
  const files = new LocalFileStorage(dir);
  await files.write('x/y.json', Readable.from([Buffer.from('{}')]));
  expect(await readdir(path.join(dir, 'x'))).toEqual(['y.json']);
});

it('S3 presigned downloads: off by default, a working short-lived URL when configured', async () => {
  const plain = createFileStorage(loadConfig(s3.env()));
  await plain.write('r/report.csv', Readable.from([Buffer.from('a,b\n1,2\n')]), 'text/csv');
  expect(await plain.presignedDownloadUrl('r/report.csv', 'report.csv', 'text/csv')).toBeUndefined();
  const signing = createFileStorage(loadConfig(s3.env({ S3_PRESIGNED_DOWNLOAD_TTL_SECONDS: '60' })));
  const url = await signing.presignedDownloadUrl('r/report.csv', 'report.csv', 'text/csv');
  expect(url).toMatch(/X-Amz-Expires=60/);
  const res = await fetch(url!);
  expect(res.status).toBe(200);
  expect(await res.text()).toBe('a,b\n1,2\n');
  expect(res.headers.get('content-disposition')).toBe('attachment; filename="report.csv"');
  plain.close?.();
  signing.close?.();
});

it('FILE_STORAGE=s3 without a bucket stops the configuration with the variable name', () => {
  expect(() => loadConfig({ FILE_STORAGE: 's3' })).toThrow(/S3_BUCKET/);
});

/**
 * Owns what exports and reports have in common as records of a generated file: the file
 * columns, creation, reads and lists scoped to an organization, the download refusals
 * (not ready / expired), ending a pending record once with its event, and the expiry sweep.
 * `ExportService` and `ReportService` each hold one `FileRecords` for their own table.
 * No HTTP here: a download answers a `FileHandle`, which the route streams or redirects to.
 */
import type { Readable } from 'node:stream';
import { type EntityData, type EntityName, type FilterQuery, LockMode, type OrderDefinition, type RequiredEntityData } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { HeldClaim } from '../../http/idempotency';
import { conflict, DomainError, gone, notFound } from '../../errors';
import { offsetOf, type Page, type Pagination, paginate } from '../../http/pagination';
import type { Services } from '../../services';
import { recordEvent } from '../events/outbox';
import type { FileRecord } from './file-record.entity';

/** A file ready to download: either a presigned URL to redirect to, or its bytes to stream. */
export type FileHandle = {
  filename: string;
  contentType: string;
  /** Extra response headers (an export's metadata), sent with either answer. */
  headers: Record<string, string>;
} & ({ redirectUrl: string } | { stream: Readable; size: number });

/** What the service of a file-producing kind answers its routes (src/modules/files/file-job.routes.ts), scoped to an organization. */
export interface FileJobService<In, Out> {
  /** `claim`: the request's `Idempotency-Key` claim; the record's id is its recovery point (`FileRecords.create`). */
  create(organizationId: string, body: In, claim?: HeldClaim): Promise<Out>;
  get(organizationId: string, id: string): Promise<Out>;
  list(organizationId: string, page: Page): Promise<{ data: Out[]; pagination: Pagination }>;
  download(organizationId: string, id: string): Promise<FileHandle>;
}

/** What a download is named and typed as, from its record. */
export interface FileNaming {
  filename: string;
  contentType: string;
  headers?: Record<string, string>;
}

/** The event committed with a record's final state. */
export type FinalEvent = Omit<Parameters<typeof recordEvent>[1], 'organizationId'>;

/** Rough throughput used for `estimated_completion` (rows per second, and a floor). */
const ESTIMATED_ROWS_PER_SECOND = 50_000;
const MIN_ESTIMATE_MS = 5_000;

export function estimatedCompletion(createdAt: Date, rows: number | null): Date {
  const ms = Math.max(MIN_ESTIMATE_MS, rows === null ? 0 : (rows / ESTIMATED_ROWS_PER_SECOND) * 1000);
  return new Date(createdAt.getTime() + ms);
}

export class FileRecords<T extends FileRecord> {
  /** EXPORT / REPORT: the prefix of the kind's error codes. */
  private readonly prefix: string;

  /**
   * @param kind `export` or `report`: names the error codes (`EXPORT_NOT_FOUND`...).
   * @param pendingStatus the status of a record whose file is being written.
   */
  constructor(
    private readonly services: Services,
    private readonly entity: EntityName<T>,
    private readonly kind: 'export' | 'report',
    private readonly pendingStatus: T['status'],
  ) {
    this.prefix = kind.toUpperCase();
  }

  em(): EntityManager {
    return this.services.orm.em.fork() as EntityManager;
  }

  url(path: string): string {
    return `${this.services.config.BASE_URL}${path}`;
  }

  /** Every id must be a live workflow of the organization: another one is 404 (no existence leak). */
  async requireWorkflows(organizationId: string, ids: string[] | undefined): Promise<void> {
    if (!ids?.length) return;
    const found = await this.em().execute<Array<{ id: string }>>(
      `select id from workflows where organization_id = ? and deleted_at is null and id in (${ids.map(() => '?').join(', ')})`,
      [organizationId, ...ids],
    );
    const known = new Set(found.map((r) => r.id));
    const missing = ids.findIndex((id) => !known.has(id));
    if (missing >= 0) {
      throw notFound('WORKFLOW_NOT_FOUND', `Workflow ${ids[missing]}`, `filters.workflow_ids[${missing}]`);
    }
  }

  /** Records a new pending record (committed before its workflow is started). */
  /** Creates the record; with `claim`, its id is recorded as the request's recovery point in the same transaction. */
  async create(data: RequiredEntityData<T>, claim?: HeldClaim): Promise<T> {
    return await this.em().transactional(async (tx) => {
      const r = tx.create(this.entity, data);
      await tx.flush();
      await claim?.recordIn(tx, { record_id: r.id });
      return r;
    });
  }

  async find(organizationId: string, id: string): Promise<T> {
    const r = await this.em().findOne(this.entity, { id, organizationId } as FilterQuery<T>);
    if (!r) throw notFound(`${this.prefix}_NOT_FOUND`, this.kind === 'export' ? 'Export' : 'Report');
    return r;
  }

  /** One page of an organization's records, newest first. */
  async list<O>(organizationId: string, page: Page, out: (r: T) => O) {
    const [items, total] = await this.em().findAndCount(this.entity, { organizationId } as FilterQuery<T>, {
      orderBy: { createdAt: 'desc', id: 'desc' } as OrderDefinition<T>,
      limit: page.limit,
      offset: offsetOf(page),
    });
    return paginate(items.map(out), page, total);
  }

  /**
   * The record's file, or the refusal of a file that is not there: still being written (409
   * with Retry-After), failed (409, no file) or past `expires_at` (410, even before the sweep).
   */
  async download(organizationId: string, id: string, naming: (r: T) => FileNaming): Promise<FileHandle> {
    const r = await this.find(organizationId, id);
    if (r.status === this.pendingStatus) {
      throw new DomainError('conflict', `${this.prefix}_NOT_READY`, `The ${this.kind} is still ${r.status}`, { retryAfterSeconds: 5 });
    }
    if (r.status === 'failed') throw conflict(`${this.prefix}_NOT_READY`, `The ${this.kind} failed and has no file: ${r.errorMessage ?? 'unknown error'}`);
    if (r.status === 'expired' || (r.expiresAt && r.expiresAt <= new Date())) throw gone(`${this.prefix}_EXPIRED`, `The ${this.kind} file has expired`);
    const { filename, contentType, headers = {} } = naming(r);
    const redirectUrl = await this.services.files.presignedDownloadUrl(r.fileKey!, filename, contentType);
    if (redirectUrl) return { filename, contentType, headers, redirectUrl };
    const file = await this.services.files.read(r.fileKey!);
    return { filename, contentType, headers, stream: file.stream, size: file.size };
  }

  /** The record while its file is being written; undefined when it is gone or no longer pending (its workflow then stops). */
  async pending(id: string): Promise<T | undefined> {
    const r = await this.em().findOne(this.entity, { id } as FilterQuery<T>);
    return r?.status === this.pendingStatus ? r : undefined;
  }

  async updatePending(id: string, changes: EntityData<T>): Promise<void> {
    await this.em().nativeUpdate(this.entity, { id, status: this.pendingStatus } as FilterQuery<T>, changes);
  }

  /** Ends a pending record once: under its row lock, `end` sets the final state and returns the event committed with it. */
  private async finish(id: string, end: (r: T) => FinalEvent): Promise<void> {
    await this.em().transactional(async (tx) => {
      const r = await tx.findOne(this.entity, { id, status: this.pendingStatus } as FilterQuery<T>, { lockMode: LockMode.PESSIMISTIC_WRITE });
      if (!r) return;
      recordEvent(tx, { organizationId: r.organizationId, ...end(r) });
    });
  }

  /** Completes a pending record; `event` also sets the kind's own columns. Files are kept REPORT_RETENTION_DAYS. */
  async complete(id: string, size: number, completedAt: Date | undefined, event: (r: T, expiresAt: Date) => FinalEvent): Promise<void> {
    await this.finish(id, (r) => {
      r.status = 'completed';
      r.fileSize = size;
      r.completedAt = completedAt ?? new Date();
      r.expiresAt = new Date(r.completedAt.getTime() + this.services.config.REPORT_RETENTION_DAYS * 86_400_000);
      return event(r, r.expiresAt);
    });
  }

  /** Fails a pending record with its `*_GENERATION_FAILED` error. */
  async fail(id: string, message: string, event: (r: T, error: { code: string; message: string }) => FinalEvent): Promise<void> {
    await this.finish(id, (r) => {
      r.status = 'failed';
      r.errorMessage = message.slice(0, 1000);
      r.completedAt = new Date();
      return event(r, { code: `${this.prefix}_GENERATION_FAILED`, message: r.errorMessage });
    });
  }

  /** Deletes the files of completed records past `expires_at` and marks them expired. */
  async expire(now = new Date()): Promise<number> {
    let expired = 0;
    const due = await this.em().find(this.entity, { status: 'completed', expiresAt: { $lte: now } } as unknown as FilterQuery<T>, { limit: 1000 });
    for (const r of due) {
      // File first: a crash in between leaves a completed record whose file is gone,
      // which the next sweep marks expired (deleting a missing file is a no-op).
      if (r.fileKey) await this.services.files.delete(r.fileKey);
      expired += await this.em().nativeUpdate(this.entity, { id: r.id, status: 'completed' } as FilterQuery<T>, { status: 'expired' } as unknown as EntityData<T>);
    }
    return expired;
  }
}

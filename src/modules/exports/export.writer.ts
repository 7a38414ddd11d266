/**
 * Owns writing one export file into file storage, streamed with backpressure end to end,
 * so memory stays flat whatever the size:
 * - CSV of a table data type: PostgreSQL's own CSV writer (`COPY (query) TO STDOUT`,
 *   pg-copy-streams) streams the bytes; a quote-aware line counter reports the rows. Rows
 *   formatted field by field in JavaScript (csv-stringify) measured 6x slower than psql and
 *   grew the worker's heap by ~260 MB on a million rows (docs/reports.md, Benchmark).
 * - NDJSON and xlsx (and the small `workflow_metrics` CSV): rows come from a server-side
 *   cursor (pg-cursor) in batches with one batch of read-ahead; each batch is rendered at
 *   once (NDJSON, exceljs's streaming WorkbookWriter, csv-stringify) and the next is read
 *   only once storage has taken the last.
 * The caller hears the running row count (for heartbeats and the progress field).
 * exceljs is loaded by the first xlsx export, not with the module: it costs about 0.5 s at
 * start-up (more under jest), paid otherwise by every API process and worker and every test
 * file that boots the app, most of which never write a workbook.
 */
import { once } from 'node:events';
import { PassThrough, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { EntityManager } from '@mikro-orm/postgresql';
import { stringify } from 'csv-stringify/sync';
import { Client } from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import Cursor from 'pg-cursor';
import type { Services } from '../../services';
import { computeReportData } from '../reports/report.data';
import { type ExportDataType, type ExportFilters, exportColumns, exportCountQuery, exportRowsQuery, type TableDataType } from './export.sources';

export type ExportFormat = 'csv' | 'json' | 'xlsx';

export const EXPORT_CONTENT_TYPES: Record<ExportFormat, string> = {
  csv: 'text/csv; charset=utf-8',
  json: 'application/x-ndjson',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
};

export interface ExportJob {
  id: string;
  organizationId: string;
  dataType: ExportDataType;
  format: ExportFormat;
  filters: ExportFilters;
  /** The request's own filter fields, as the metadata repeats them. */
  requestFilters: Record<string, unknown>;
  includeMetadata: boolean;
  fileKey: string;
}

export interface ExportMetadata {
  export_id: string;
  data_type: string;
  format: string;
  filters: Record<string, unknown>;
  generated_at: string;
  row_count: number;
}

/** Rows per cursor fetch: large enough to amortize round trips and writes, small enough to stay flat. */
const BATCH_SIZE = 2000;

type Row = unknown[];

const WORKFLOW_METRICS_COLUMNS = ['workflow_id', 'workflow_name', 'date', 'executions', 'success_rate', 'average_duration_ms'];

/** The rows of an export as batches, read from one database snapshot taken at `generatedAt`. */
interface RowSource {
  generatedAt: Date;
  /** The number of rows the batches hold, when it was asked for before reading them. */
  rowCount?: number;
  batches: Iterable<Row[]> | AsyncIterable<Row[]>;
  close(): Promise<void>;
}

/** `workflow_metrics`: computed whole (one row per workflow and day, a small set), so its count is known first. */
async function workflowMetricsSource(em: EntityManager, job: ExportJob): Promise<RowSource> {
  const start = job.requestFilters.start_date as string | undefined;
  const end = job.requestFilters.end_date as string | undefined;
  const generatedAt = new Date();
  const data = await computeReportData(em, {
    organizationId: job.organizationId,
    metrics: [],
    ...(start ? { startDate: start } : {}),
    ...(end ? { endDate: end } : {}),
    ...(job.filters.workflowIds ? { workflowIds: job.filters.workflowIds } : {}),
    ...(job.filters.channels ? { channels: job.filters.channels } : {}),
    groupBy: ['workflow_id'],
    granularity: 'day',
  });
  const batches = data.groups.map((g) => g.series.map((s) => [g.workflow_id, g.workflow_name, s.date, s.executions, s.success_rate, s.average_duration_ms]));
  return { generatedAt, rowCount: batches.reduce((n, b) => n + b.length, 0), batches: batches.filter((b) => b.length > 0), close: async () => undefined };
}

/**
 * A table data type through a server-side cursor, inside one read-only REPEATABLE READ
 * transaction: with `countFirst` the count and the rows come from the same snapshot, so a
 * metadata line's `row_count` is exactly the number of rows that follow it.
 */
async function tableSource(databaseUrl: string, dataType: TableDataType, job: ExportJob, countFirst: boolean): Promise<RowSource> {
  const client = new Client({ connectionString: databaseUrl, application_name: `wfa-export-${job.id}` });
  await client.connect();
  try {
    await client.query('begin transaction isolation level repeatable read read only');
    const generatedAt = new Date();
    let rowCount: number | undefined;
    if (countFirst) {
      const { text, values } = exportCountQuery(dataType, job.organizationId, job.filters);
      rowCount = (await client.query<{ n: number }>(text, values)).rows[0]?.n ?? 0;
    }
    return {
      generatedAt,
      ...(rowCount !== undefined ? { rowCount } : {}),
      batches: cursorBatches(client, dataType, job),
      close: async () => {
        await client.query('commit').catch(() => undefined);
        await client.end().catch(() => undefined);
      },
    };
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
}

async function* cursorBatches(client: Client, dataType: TableDataType, job: ExportJob): AsyncGenerator<Row[]> {
  const { text, values } = exportRowsQuery(dataType, job.organizationId, job.filters);
  const cursor = client.query(new Cursor<Row>(text, values, { rowMode: 'array' }));
  // One batch of read-ahead: PostgreSQL produces the next batch while this one renders.
  let next = cursor.read(BATCH_SIZE);
  try {
    for (;;) {
      const batch = await next;
      if (batch.length === 0) return;
      next = cursor.read(BATCH_SIZE);
      yield batch;
    }
  } finally {
    await next.catch(() => undefined);
    await cursor.close();
  }
}

const QUOTE = 0x22;
const NEWLINE = 0x0a;

/**
 * Counts CSV records in a byte stream: a newline outside double quotes ends a record
 * (a quote inside a field is doubled, so the in-quotes state flips twice and stays right).
 * It jumps from newline to newline and quote to quote with `Buffer#indexOf` (native memchr)
 * instead of testing every byte in JavaScript: on a million-row export that loop was a
 * quarter of the worker's CPU (~200 ms), the search is about a fifth of it.
 */
class CsvRecordCounter extends Transform {
  records = 0;
  private inQuotes = false;
  constructor(private readonly onRecords: (n: number) => void) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback) {
    let inQuotes = this.inQuotes;
    let records = this.records;
    const end = chunk.length;
    // The first quote at or after `i` (`end` when there is none), searched again only once passed.
    let nextQuote = -1;
    let i = 0;
    while (i < end) {
      if (inQuotes) {
        const closing = chunk.indexOf(QUOTE, i);
        if (closing < 0) break;
        inQuotes = false;
        i = closing + 1;
        continue;
      }
      if (nextQuote < i) {
        nextQuote = chunk.indexOf(QUOTE, i);
        if (nextQuote < 0) nextQuote = end;
      }
      const newline = chunk.indexOf(NEWLINE, i);
      if (nextQuote < (newline < 0 ? end : newline)) {
        inQuotes = true;
        i = nextQuote + 1;
      } else if (newline < 0) {
        break;
      } else {
        records++;
        i = newline + 1;
      }
    }
    this.inQuotes = inQuotes;
    this.records = records;
    this.onRecords(records);
    done(null, chunk);
  }
}

/** COPY takes no bind parameters: `$n` become literals escaped by the driver. */
function inlineParameters(client: Client, text: string, values: unknown[]): string {
  const literal = (v: unknown): string => {
    if (v instanceof Date) return `${client.escapeLiteral(v.toISOString())}::timestamptz`;
    if (Array.isArray(v)) return `array[${v.map((x) => client.escapeLiteral(String(x))).join(', ')}]::text[]`;
    return client.escapeLiteral(String(v));
  };
  return text.replace(/\$(\d+)/g, (_, n: string) => literal(values[Number(n) - 1]));
}

/** The CSV of a table data type, written by PostgreSQL; returns the number of data rows. */
async function copyCsv(databaseUrl: string, dataType: TableDataType, job: ExportJob, out: PassThrough, onRows: (n: number) => void): Promise<number> {
  const client = new Client({ connectionString: databaseUrl, application_name: `wfa-export-${job.id}` });
  await client.connect();
  try {
    const { text, values } = exportRowsQuery(dataType, job.organizationId, job.filters);
    const copy = client.query(copyTo(`copy (${inlineParameters(client, text, values)}) to stdout with (format csv, header true)`));
    // The header line is a record too.
    const counter = new CsvRecordCounter((n) => onRows(Math.max(0, n - 1)));
    await pipeline(copy, counter, out);
    return Math.max(0, counter.records - 1);
  } finally {
    // Not awaited: the connection's close (its Terminate answered by the server ending the
    // socket) took 7–15 ms after the last byte, and the file and its row count are final.
    client.end().catch(() => undefined);
  }
}

/** Writes with backpressure: waits until the consumer (the storage write) has drained. */
async function put(out: PassThrough, chunk: string): Promise<void> {
  if (!out.write(chunk)) await once(out, 'drain');
}

interface Renderer {
  batch(rows: Row[]): Promise<void>;
  end(metadata: () => ExportMetadata | undefined): Promise<void>;
}

function csvRenderer(columns: string[], out: PassThrough): Renderer {
  let header = true;
  return {
    async batch(rows) {
      await put(out, stringify(rows, { header, columns }));
      header = false;
    },
    async end() {
      // An empty export still has its header row.
      if (header) await put(out, stringify([], { header: true, columns }));
      out.end();
    },
  };
}

/**
 * NDJSON: one object per line, so every line parser reads every line. With include_metadata
 * the first line is `{"type": "metadata", ...}`, so the metadata travels with the file (a
 * presigned S3 download has none of this service's headers).
 */
function ndjsonRenderer(columns: string[], out: PassThrough): Renderer {
  return {
    async batch(rows) {
      let chunk = '';
      for (const row of rows) chunk += `${JSON.stringify(Object.fromEntries(columns.map((c, i) => [c, row[i] ?? null])))}\n`;
      await put(out, chunk);
    },
    async end() {
      out.end();
    },
  };
}

function xlsxRenderer(columns: string[], out: PassThrough, sheetName: string): Renderer {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const ExcelJS = require('exceljs') as typeof import('exceljs');
  const workbook = new ExcelJS.stream.xlsx.WorkbookWriter({ stream: out, useStyles: false, useSharedStrings: false });
  const sheet = workbook.addWorksheet(sheetName);
  sheet.addRow(columns).commit();
  return {
    async batch(rows) {
      for (const row of rows) sheet.addRow(row).commit();
      if (out.writableNeedDrain) await once(out, 'drain');
    },
    async end(metadata) {
      sheet.commit();
      const meta = metadata();
      if (meta) {
        const m = workbook.addWorksheet('metadata');
        m.addRow(['key', 'value']).commit();
        for (const [k, v] of Object.entries(meta)) m.addRow([k, typeof v === 'object' ? JSON.stringify(v) : v]).commit();
        m.commit();
      }
      await workbook.commit();
    },
  };
}

/**
 * Writes the export's file under `job.fileKey` (replacing any earlier attempt's file) and
 * returns its size, its row count and when its data was read (the metadata's `generated_at`).
 * `onRows(n)` is called after every written batch with the count so far.
 */
export async function writeExportFile(
  services: Services,
  job: ExportJob,
  onRows: (rowsSoFar: number) => void,
): Promise<{ size: number; rows: number; generatedAt: Date }> {
  let rows = 0;
  let generatedAt = new Date();
  const metadata = (rowCount: number): ExportMetadata | undefined =>
    job.includeMetadata
      ? { export_id: job.id, data_type: job.dataType, format: job.format, filters: job.requestFilters, generated_at: generatedAt.toISOString(), row_count: rowCount }
      : undefined;

  const render = async (out: PassThrough): Promise<void> => {
    if (job.format === 'csv' && job.dataType !== 'workflow_metrics') {
      generatedAt = new Date();
      rows = await copyCsv(services.config.DATABASE_URL, job.dataType, job, out, onRows);
      return;
    }
    const columns = job.dataType === 'workflow_metrics' ? WORKFLOW_METRICS_COLUMNS : exportColumns(job.dataType);
    const metadataFirst = job.format === 'json' && job.includeMetadata;
    const source =
      job.dataType === 'workflow_metrics'
        ? await workflowMetricsSource(services.orm.em.fork() as EntityManager, job)
        : await tableSource(services.config.DATABASE_URL, job.dataType, job, metadataFirst);
    try {
      generatedAt = source.generatedAt;
      const renderer =
        job.format === 'csv' ? csvRenderer(columns, out) : job.format === 'json' ? ndjsonRenderer(columns, out) : xlsxRenderer(columns, out, job.dataType);
      if (metadataFirst) await put(out, `${JSON.stringify({ type: 'metadata', ...metadata(source.rowCount ?? 0) })}\n`);
      for await (const batch of source.batches) {
        await renderer.batch(batch);
        rows += batch.length;
        onRows(rows);
      }
      await renderer.end(() => metadata(rows));
    } finally {
      await source.close();
    }
  };

  const out = new PassThrough({ highWaterMark: 1024 * 1024 });
  const storing = services.files.write(job.fileKey, out, EXPORT_CONTENT_TYPES[job.format]);
  try {
    await render(out);
  } catch (err) {
    out.destroy(err as Error);
    await storing.catch(() => undefined);
    throw err;
  }
  const stored = await storing;
  return { size: stored.size, rows, generatedAt };
}

/**
 * Owns `secrets rotate`: re-seals every stored secret that is not sealed under the keyring's
 * sealing key (`v1:` values, or `v2:` under an older key), so that the older key can then be
 * removed from SECRETS_ENCRYPTION_KEYS (docs/deploy.md, "Rotating the secrets key").
 *
 * Safe while the API serves and safe to stop: each batch is one transaction that locks its
 * rows (`for update skip locked`), opens and re-seals them and writes them back, so a
 * concurrent write either lands before (and is what the batch re-seals) or waits for the
 * commit (and replaces the re-sealed value with its own, sealed by a replica that opens
 * both keys). Rows a request holds are skipped and taken by a later pass; a stopped run
 * leaves every row either as it was or re-sealed, and a rerun carries on. The run ends
 * with a count of what is left: values written meanwhile under another sealing key (a
 * replica not yet rolled) or that open under no key of the ring.
 */
import { Client } from 'pg';
import { type SecretKeyring, type SecretPlace, sealedAt } from './secrets';

export interface RotationProgress {
  /** `table.column` (a channel connection's secrets count as one column, `channel_connections.secrets`). */
  column: string;
  /** Rows re-sealed so far, all columns (a row may hold several sealed values). */
  resealed: number;
  failed: number;
  /** Values re-sealed per second since the run started. */
  ratePerSecond: number;
}

export interface RotationReport {
  sealingKeyId: string;
  /** Rows re-sealed (a row may hold several sealed values). */
  resealed: number;
  /** Values that opened under no key of the ring (their row ids in `failedRows`). */
  failed: number;
  failedRows: string[];
  /** Rows still holding a value not under the sealing key at the end (including the failed ones). */
  remaining: number;
  passes: number;
  seconds: number;
}

type Row = Record<string, unknown> & { id: string };

/** One sealed column: how to find its rows needing work (`$1`: the current prefix), re-seal a row, and write it back. */
interface SealedColumn {
  name: string;
  /** A predicate on the row: some value of this column is not under the sealing key. */
  stale: string;
  select: string;
  table: string;
  /** The row's values re-sealed (undefined: nothing to write), or throws when one does not open. */
  reseal(row: Row, ring: SecretKeyring): { params: unknown[] } | undefined;
  update: string;
}

const notCurrent = (column: string) => `(${column} is not null and left(${column}, length($1)) <> $1)`;

function resealValue(ring: SecretKeyring, value: string | null, place: SecretPlace): string | null {
  if (value === null || ring.isCurrent(value)) return value;
  return ring.seal(ring.open(value, place), place);
}

const COLUMNS: SealedColumn[] = [
  {
    name: 'webhooks.secret, previous_secret',
    table: 'webhooks',
    select: 'id, secret, previous_secret',
    stale: `(${notCurrent('secret')} or ${notCurrent('previous_secret')})`,
    reseal(row, ring) {
      const id = row.id;
      return {
        params: [resealValue(ring, row.secret as string, sealedAt.webhookSecret(id)), resealValue(ring, row.previous_secret as string | null, sealedAt.webhookPreviousSecret(id)), id],
      };
    },
    update: 'update webhooks set secret = $1, previous_secret = $2 where id = $3',
  },
  {
    name: 'triggers.configuration.secret',
    table: 'triggers',
    select: "id, configuration->>'secret' as secret",
    stale: notCurrent("(configuration->>'secret')"),
    reseal: (row, ring) => ({ params: [resealValue(ring, row.secret as string, sealedAt.triggerSecret(row.id)), row.id] }),
    update: "update triggers set configuration = jsonb_set(configuration, '{secret}', to_jsonb($1::text)) where id = $2",
  },
  {
    name: 'channel_connections.secrets',
    table: 'channel_connections',
    select: 'id, secrets',
    stale: `exists (select 1 from jsonb_each_text(secrets) s where ${notCurrent('s.value')})`,
    reseal(row, ring) {
      const secrets = Object.fromEntries(
        Object.entries(row.secrets as Record<string, string>).map(([name, value]) => [name, resealValue(ring, value, sealedAt.channelSecret(row.id, name))]),
      );
      return { params: [JSON.stringify(secrets), row.id] };
    },
    update: 'update channel_connections set secrets = $1::jsonb where id = $2',
  },
];

const MAX_PASSES = 10;

export async function rotateSecrets(
  databaseUrl: string,
  ring: SecretKeyring,
  opts: { batchSize?: number; onProgress?: (p: RotationProgress) => void } = {},
): Promise<RotationReport> {
  const sealingKeyId = ring.sealingKeyId;
  if (!sealingKeyId) throw new Error('SECRETS_ENCRYPTION_KEYS is not set: there is no key to re-seal under');
  const prefix = `v2:${sealingKeyId}:`;
  const batchSize = opts.batchSize ?? 100;
  const started = performance.now();
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  let resealed = 0;
  const failedRows = new Set<string>();
  let passes = 0;
  try {
    // A pass skips the rows requests hold and the rows that fail; the next pass retries the
    // former. Passes end when one re-seals nothing.
    for (let pass = 1; pass <= MAX_PASSES; pass++) {
      passes = pass;
      let resealedThisPass = 0;
      for (const column of COLUMNS) {
        let cursor = '';
        for (;;) {
          await client.query('begin');
          let rows: Row[];
          try {
            rows = (
              await client.query<Row>(
                `select ${column.select} from ${column.table} where ${column.stale} and id > $2 order by id limit $3 for update skip locked`,
                [prefix, cursor, batchSize],
              )
            ).rows;
            let batchFailed = 0;
            for (const row of rows) {
              let update: { params: unknown[] } | undefined;
              try {
                update = column.reseal(row, ring);
              } catch {
                failedRows.add(`${column.table}/${row.id}`);
                batchFailed++;
                continue;
              }
              if (update) await client.query(column.update, update.params);
            }
            await client.query('commit');
            const done = rows.length - batchFailed;
            resealed += done;
            resealedThisPass += done;
          } catch (err) {
            await client.query('rollback').catch(() => undefined);
            throw err;
          }
          if (rows.length === 0) break;
          cursor = rows.at(-1)!.id;
          const seconds = (performance.now() - started) / 1000;
          opts.onProgress?.({ column: column.name, resealed, failed: failedRows.size, ratePerSecond: seconds > 0 ? resealed / seconds : resealed });
          if (rows.length < batchSize) break;
        }
      }
      if (resealedThisPass === 0) break;
    }
    let remaining = 0;
    for (const column of COLUMNS) {
      const { rows } = await client.query<{ n: string }>(`select count(*) as n from ${column.table} where ${column.stale}`, [prefix]);
      remaining += Number(rows[0]!.n);
    }
    return { sealingKeyId, resealed, failed: failedRows.size, failedRows: [...failedRows], remaining, passes, seconds: (performance.now() - started) / 1000 };
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * The operator CLI (`npm run cli -- <command>`), as a function of its arguments, environment
 * and streams so that tests call it as the shell does. Exit codes: 0 done, 1 failed (the
 * database, a key that is not there, secrets left to rotate), 2 usage (unknown command, bad
 * or missing option). `--json` prints one JSON document on stdout instead of text; progress
 * goes to stderr either way. Only `migrate` migrates: the other commands refuse to run on a
 * database whose schema is behind, naming the command that fixes it.
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { ConfigError, loadConfig, type Config } from '../../src/config';
import { migrateExclusively } from '../../src/db/migration-lock';
import { createOrm, ensureDatabase, pendingMigrations, type Orm } from '../../src/db/orm';
import { entities } from '../../src/entities';
import { PERMISSIONS } from '../../src/credentials/scopes';
import { ApiKeyService } from '../../src/modules/api-keys/api-key.service';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from '../../src/modules/users/password';
import { UserService } from '../../src/modules/users/user.service';
import { keyringOf } from '../../src/secrets';
import { rotateSecrets } from '../../src/secrets-rotation';

export interface CliIo {
  env: NodeJS.ProcessEnv;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** The whole of stdin (users create reads the password there). */
  readStdin: () => Promise<string>;
}

/** A usage error: exit code 2, with the command's help. */
class UsageError extends Error {}
/** A failure the operator can act on: exit code 1, the message alone (no stack). */
class CommandError extends Error {}

interface Command {
  usage: string;
  summary: string;
  options: NonNullable<Parameters<typeof parseArgs>[0]>['options'];
  /** How many positional arguments after the command's words (api-keys revoke <id>: 1). */
  positionals?: string[];
  run(ctx: { values: Record<string, unknown>; positionals: string[]; json: boolean; io: CliIo }): Promise<number>;
}

const json = { type: 'boolean' } as const;
const Org = z.string().trim().min(1).max(200);
const ApiKeyArgs = z.object({ org: Org, name: z.string().trim().min(1).max(200), permission: z.enum(PERMISSIONS) });
const UserArgs = z.object({ org: Org, email: z.email().max(320), role: z.enum(PERMISSIONS) });

function parse<S extends z.ZodType>(schema: S, values: unknown): z.output<S> {
  const parsed = schema.safeParse(values);
  if (parsed.success) return parsed.data;
  throw new UsageError(parsed.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`).join('\n'));
}

function configOf(io: CliIo, opts: { requireSecretsKey?: boolean } = {}): Config {
  try {
    return loadConfig(io.env, opts);
  } catch (err) {
    if (err instanceof ConfigError) throw new CommandError(err.message);
    throw err;
  }
}

/** An ORM on a database whose schema is current; refuses otherwise (only `migrate` migrates). */
async function withMigratedOrm<T>(config: Config, run: (orm: Orm) => Promise<T>): Promise<T> {
  const orm = await createOrm(entities, config.DATABASE_URL, 2, config.DATABASE_ACQUIRE_TIMEOUT_MS).catch((err: Error) => {
    throw new CommandError(`cannot connect to the database: ${err.message}`);
  });
  try {
    const pending = await pendingMigrations(orm);
    if (pending.length > 0) {
      throw new CommandError(`the database schema is not migrated (${pending.length} pending migrations, first ${pending[0]}): run \`npm run cli -- migrate\` first`);
    }
    return await run(orm);
  } finally {
    await orm.close(true);
  }
}

/** Text output: aligned columns under a header. */
function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  return `${[line(headers), ...rows.map(line)].join('\n')}\n`;
}

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

const COMMANDS: Record<string, Command> = {
  'api-keys create': {
    usage: 'api-keys create --org <org name> --name <key name> --permission <read|read_write|admin> [--json]',
    summary: 'Creates an API key (and the organization when missing); prints the key alone on the last line, once.',
    options: { org: { type: 'string' }, name: { type: 'string' }, permission: { type: 'string' }, json },
    async run({ values, json: asJson, io }) {
      const args = parse(ApiKeyArgs, values);
      return withMigratedOrm(configOf(io), async (orm) => {
        const svc = new ApiKeyService(orm.em.fork());
        const org = await svc.ensureOrganization(args.org);
        const { apiKey, key } = await svc.create(org.id, args.name, args.permission);
        if (asJson) {
          io.stdout(`${JSON.stringify({ id: apiKey.id, organization_id: org.id, organization: org.name, name: apiKey.name, permission: apiKey.permission, key })}\n`);
        } else {
          io.stdout(`Created ${apiKey.permission} API key ${apiKey.id} ("${apiKey.name}") for organization ${org.name} (${org.id}).\n`);
          io.stdout('Store it now: it is not shown again.\n');
          io.stdout(`${key}\n`);
        }
        return 0;
      });
    },
  },
  'api-keys list': {
    usage: 'api-keys list [--org <org name>] [--json]',
    summary: 'Lists the API keys that are not revoked (never the keys themselves: their first and last characters).',
    options: { org: { type: 'string' }, json },
    async run({ values, json: asJson, io }) {
      const org = values.org === undefined ? undefined : parse(Org, values.org);
      return withMigratedOrm(configOf(io), async (orm) => {
        const rows = await orm.em.getConnection().execute<
          Array<{ id: string; organization_id: string; organization: string; name: string; permission: string; prefix: string; last_four: string; created_at: Date; last_used_at: Date | null }>
        >(
          `select k.id, k.organization_id, o.name as organization, k.name, k.permission, k.prefix, k.last_four, k.created_at, k.last_used_at
             from api_keys k join organizations o on o.id = k.organization_id
            where k.revoked_at is null ${org === undefined ? '' : 'and o.name = ?'}
            order by o.name, k.created_at, k.id`,
          org === undefined ? [] : [org],
        );
        const data = rows.map((r) => ({ ...r, created_at: iso(r.created_at), last_used_at: iso(r.last_used_at) }));
        if (asJson) io.stdout(`${JSON.stringify({ data })}\n`);
        else
          io.stdout(
            table(
              ['ID', 'ORGANIZATION', 'NAME', 'PERMISSION', 'KEY', 'CREATED', 'LAST USED'],
              data.map((k) => [k.id, k.organization, k.name, k.permission, `${k.prefix}…${k.last_four}`, k.created_at!, k.last_used_at ?? '-']),
            ),
          );
        return 0;
      });
    },
  },
  'api-keys revoke': {
    usage: 'api-keys revoke <key id> [--json]',
    summary: 'Revokes an API key by its id (api-keys list); every process refuses it within AUTH_CACHE_TTL_MS.',
    options: { json },
    positionals: ['key id'],
    async run({ positionals: [id], json: asJson, io }) {
      if (!/^[A-Za-z0-9_]{1,100}$/.test(id!)) throw new UsageError(`<key id>: "${id}" is not an API key id`);
      return withMigratedOrm(configOf(io), async (orm) => {
        const rows = await orm.em
          .getConnection()
          .execute<Array<{ id: string; organization_id: string; revoked_at: Date }>>('update api_keys set revoked_at = now() where id = ? and revoked_at is null returning id, organization_id, revoked_at', [id]);
        const revoked = rows[0];
        if (!revoked) throw new CommandError(`no API key ${id} that is not revoked already`);
        if (asJson) io.stdout(`${JSON.stringify({ id: revoked.id, organization_id: revoked.organization_id, revoked_at: iso(revoked.revoked_at) })}\n`);
        else io.stdout(`Revoked API key ${revoked.id}.\n`);
        return 0;
      });
    },
  },
  'users create': {
    usage: 'users create --org <org name> --email <email> --role <read|read_write|admin> [--json]   (password on stdin)',
    summary: 'Creates a user (and the organization when missing), the password read from stdin so that it never appears in the shell history.',
    options: { org: { type: 'string' }, email: { type: 'string' }, role: { type: 'string' }, json },
    async run({ values, json: asJson, io }) {
      const args = parse(UserArgs, values);
      const password = (await io.readStdin()).replace(/\r?\n$/, '');
      if (password.length < PASSWORD_MIN_LENGTH || password.length > PASSWORD_MAX_LENGTH) {
        throw new UsageError(`the password (stdin) must be ${PASSWORD_MIN_LENGTH}–${PASSWORD_MAX_LENGTH} characters`);
      }
      return withMigratedOrm(configOf(io), async (orm) => {
        const org = await new ApiKeyService(orm.em.fork()).ensureOrganization(args.org);
        const user = await new UserService(orm.em.fork()).create(org.id, { email: args.email, password, role: args.role });
        if (asJson) io.stdout(`${JSON.stringify({ id: user.id, organization_id: org.id, email: user.email, role: user.role })}\n`);
        else {
          io.stdout(`Created ${user.role} user ${user.email} for organization ${org.name} (${org.id}).\n`);
          io.stdout(`${user.id}\n`);
        }
        return 0;
      });
    },
  },
  'organizations list': {
    usage: 'organizations list [--json]',
    summary: 'Lists the organizations with their count of API keys that are not revoked.',
    options: { json },
    async run({ json: asJson, io }) {
      return withMigratedOrm(configOf(io), async (orm) => {
        const rows = await orm.em.getConnection().execute<Array<{ id: string; name: string; created_at: Date; api_keys: string }>>(
          `select o.id, o.name, o.created_at, (select count(*) from api_keys k where k.organization_id = o.id and k.revoked_at is null) as api_keys
             from organizations o order by o.name`,
        );
        const data = rows.map((o) => ({ id: o.id, name: o.name, created_at: iso(o.created_at), api_keys: Number(o.api_keys) }));
        if (asJson) io.stdout(`${JSON.stringify({ data })}\n`);
        else io.stdout(table(['ID', 'NAME', 'CREATED', 'API KEYS'], data.map((o) => [o.id, o.name, o.created_at!, String(o.api_keys)])));
        return 0;
      });
    },
  },
  'secrets rotate': {
    usage: 'secrets rotate [--batch-size <n>] [--json]',
    summary:
      "Re-seals every stored secret under the keyring's first key (SECRETS_ENCRYPTION_KEYS), in batches of one transaction each; " +
      'safe while the service runs, safe to stop and run again. Exits 1 when values are left that it could not re-seal.',
    options: { 'batch-size': { type: 'string' }, json },
    async run({ values, json: asJson, io }) {
      const batchSize = parse(z.coerce.number().int().min(1).max(10_000).default(100), values['batch-size']);
      const config = configOf(io, { requireSecretsKey: true });
      const ring = keyringOf(config);
      const report = await withMigratedOrm(config, () =>
        rotateSecrets(config.DATABASE_URL, ring, {
          batchSize,
          onProgress: (p) => io.stderr(`${p.column}: ${p.resealed} rows re-sealed so far (${p.ratePerSecond.toFixed(0)}/s)${p.failed ? `, ${p.failed} failed` : ''}\n`),
        }),
      );
      if (asJson) io.stdout(`${JSON.stringify({ sealing_key_id: report.sealingKeyId, resealed: report.resealed, failed: report.failed, failed_rows: report.failedRows, remaining: report.remaining, seconds: Number(report.seconds.toFixed(3)) })}\n`);
      else {
        io.stdout(`Re-sealed ${report.resealed} rows under key "${report.sealingKeyId}" in ${report.seconds.toFixed(1)} s.\n`);
        if (report.failed) io.stdout(`${report.failed} open under no key of the keyring: ${report.failedRows.join(', ')}\n`);
        if (report.remaining) {
          io.stdout(
            `${report.remaining} rows still hold secrets not sealed under "${report.sealingKeyId}": ` +
              'every replica must seal with this key first (SECRETS_ENCRYPTION_KEYS in the same order everywhere); run the command again.\n',
          );
        } else io.stdout(`Every stored secret is sealed under "${report.sealingKeyId}": the other keys can be removed.\n`);
      }
      return report.remaining === 0 ? 0 : 1;
    },
  },
  migrate: {
    usage: 'migrate [--json]',
    summary: 'Creates the database if missing and applies the pending migrations, under the advisory lock the service takes (replicas and runs take turns).',
    options: { json },
    async run({ json: asJson, io }) {
      const config = configOf(io);
      await ensureDatabase(config.DATABASE_URL);
      const orm = await createOrm(entities, config.DATABASE_URL, 2, config.DATABASE_ACQUIRE_TIMEOUT_MS);
      try {
        const pending = await pendingMigrations(orm);
        if (!asJson) io.stderr(`${pending.length} pending migrations; waiting for the migration lock…\n`);
        await migrateExclusively(orm, config.DATABASE_URL);
        // Another process may have applied some of them while this one waited for the lock.
        const left = await pendingMigrations(orm);
        if (asJson) io.stdout(`${JSON.stringify({ pending_before: pending, pending_after: left })}\n`);
        else io.stdout(`Migrations applied; the schema is current (${pending.length} were pending).\n`);
        return left.length === 0 ? 0 : 1;
      } finally {
        await orm.close(true);
      }
    },
  },
};

const USAGE = `usage: npm run cli -- <command> [options]   (--help after a command: its help)

commands:
${Object.values(COMMANDS)
  .map((c) => `  ${c.usage}\n      ${c.summary}`)
  .join('\n')}

exit codes: 0 done, 1 failed, 2 usage error. --json prints one JSON document on stdout.
`;

/** Runs the CLI; returns the exit code (never throws). */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const words = argv.filter((a) => !a.startsWith('-')).slice(0, 2);
  const name = COMMANDS[words.join(' ')] ? words.join(' ') : COMMANDS[words[0] ?? ''] ? words[0]! : undefined;
  const wantsHelp = argv.includes('--help') || argv.includes('-h');
  if (!name) {
    if (wantsHelp || argv.length === 0) {
      io.stdout(USAGE);
      return argv.length === 0 ? 2 : 0;
    }
    io.stderr(`unknown command "${words.join(' ')}"\n${USAGE}`);
    return 2;
  }
  const command = COMMANDS[name]!;
  const help = `usage: npm run cli -- ${command.usage}\n  ${command.summary}\n`;
  if (wantsHelp) {
    io.stdout(help);
    return 0;
  }
  let values: Record<string, unknown>;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args: argv, options: command.options ?? {}, allowPositionals: true, strict: true }));
    positionals = positionals.slice(name.split(' ').length);
    const expected = command.positionals ?? [];
    if (positionals.length !== expected.length) {
      throw new UsageError(expected.length ? `expected ${expected.map((p) => `<${p}>`).join(' ')}` : `unexpected argument "${positionals[0]}"`);
    }
  } catch (err) {
    io.stderr(`${(err as Error).message}\n${help}`);
    return 2;
  }
  try {
    return await command.run({ values, positionals, json: values.json === true, io });
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`${err.message}\n${help}`);
      return 2;
    }
    io.stderr(`${err instanceof CommandError ? err.message : ((err as Error).stack ?? String(err))}\n`);
    return 1;
  }
}

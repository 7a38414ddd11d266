/**
 * Operator CLI. Creates the organization when missing.
 * - `npm run cli -- api-keys create --org <name> --name <name> --permission <level>` prints
 *   the new key alone on the last line.
 * - `npm run cli -- users create --org <name> --email <email> --role <role>` reads the
 *   password from stdin (so it never appears in the shell history or process list).
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { loadConfig } from '../src/config';
import { createOrm, ensureDatabase, migrate, type Orm } from '../src/db/orm';
import { entities } from '../src/entities';
import { PERMISSIONS } from '../src/credentials/scopes';
import { ApiKeyService } from '../src/modules/api-keys/api-key.service';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from '../src/modules/users/password';
import { UserService } from '../src/modules/users/user.service';

const USAGE = `usage:
  npm run cli -- api-keys create --org <org name> --name <key name> --permission <read|read_write|admin>
  npm run cli -- users create --org <org name> --email <email> --role <read|read_write|admin>   (password on stdin)`;

const Org = z.string().trim().min(1).max(200);
const ApiKeyArgs = z.object({ org: Org, name: z.string().trim().min(1).max(200), permission: z.enum(PERMISSIONS) });
const UserArgs = z.object({ org: Org, email: z.email().max(320), role: z.enum(PERMISSIONS) });

function parse<S extends z.ZodType>(schema: S, values: unknown): z.output<S> {
  const parsed = schema.safeParse(values);
  if (parsed.success) return parsed.data;
  throw new Error(`${parsed.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`).join('\n')}\n${USAGE}`);
}

async function readPassword(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('Password (input is echoed; pipe it in to avoid that): ');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const password = Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
  if (password.length < PASSWORD_MIN_LENGTH || password.length > PASSWORD_MAX_LENGTH) {
    throw new Error(`the password (stdin) must be ${PASSWORD_MIN_LENGTH}–${PASSWORD_MAX_LENGTH} characters`);
  }
  return password;
}

async function withOrm(run: (orm: Orm) => Promise<void>) {
  const config = loadConfig();
  await ensureDatabase(config.DATABASE_URL);
  const orm = await createOrm(entities, config.DATABASE_URL, 2);
  try {
    await migrate(orm);
    await run(orm);
  } finally {
    await orm.close(true);
  }
}

async function main(argv: string[]) {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { org: { type: 'string' }, name: { type: 'string' }, permission: { type: 'string' }, email: { type: 'string' }, role: { type: 'string' } },
  });
  const command = positionals.join(' ');
  if (command === 'api-keys create') {
    const args = parse(ApiKeyArgs, values);
    await withOrm(async (orm) => {
      const svc = new ApiKeyService(orm.em.fork());
      const org = await svc.ensureOrganization(args.org);
      const { apiKey, key } = await svc.create(org.id, args.name, args.permission);
      process.stdout.write(`Created ${apiKey.permission} API key ${apiKey.id} ("${apiKey.name}") for organization ${org.name} (${org.id}).\n`);
      process.stdout.write('Store it now: it is not shown again.\n');
      process.stdout.write(`${key}\n`);
    });
  } else if (command === 'users create') {
    const args = parse(UserArgs, values);
    const password = await readPassword();
    await withOrm(async (orm) => {
      const org = await new ApiKeyService(orm.em.fork()).ensureOrganization(args.org);
      const user = await new UserService(orm.em.fork()).create(org.id, { email: args.email, password, role: args.role });
      process.stdout.write(`Created ${user.role} user ${user.email} for organization ${org.name} (${org.id}).\n`);
      process.stdout.write(`${user.id}\n`);
    });
  } else {
    throw new Error(USAGE);
  }
}

main(process.argv.slice(2)).catch((err: Error) => {
  process.stderr.write(`${err.message}\n`);
  process.exit(2);
});

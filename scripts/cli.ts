/**
 * Operator CLI. `npm run cli -- api-keys create --org <name> --name <name> --permission <level>`
 * creates the organization when missing and prints the new key alone on the last line.
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { loadConfig } from '../src/config';
import { createOrm, ensureDatabase, migrate } from '../src/db/orm';
import { PERMISSIONS } from '../src/modules/api-keys/api-key.entity';
import { ApiKeyService } from '../src/modules/api-keys/api-key.service';

const USAGE = 'usage: npm run cli -- api-keys create --org <org name> --name <key name> --permission <read|read_write|admin>';

const CreateArgs = z.object({
  org: z.string().trim().min(1).max(200),
  name: z.string().trim().min(1).max(200),
  permission: z.enum(PERMISSIONS),
});

async function main(argv: string[]) {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { org: { type: 'string' }, name: { type: 'string' }, permission: { type: 'string' } },
  });
  if (positionals[0] !== 'api-keys' || positionals[1] !== 'create') throw new Error(USAGE);
  const parsed = CreateArgs.safeParse(values);
  if (!parsed.success) {
    throw new Error(`${parsed.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`).join('\n')}\n${USAGE}`);
  }
  const config = loadConfig();
  await ensureDatabase(config.DATABASE_URL);
  const orm = await createOrm(config.DATABASE_URL, 2);
  try {
    await migrate(orm);
    const svc = new ApiKeyService(orm.em.fork());
    const org = await svc.ensureOrganization(parsed.data.org);
    const { apiKey, key } = await svc.create(org.id, parsed.data.name, parsed.data.permission);
    process.stdout.write(`Created ${apiKey.permission} API key ${apiKey.id} ("${apiKey.name}") for organization ${org.name} (${org.id}).\n`);
    process.stdout.write('Store it now: it is not shown again.\n');
    process.stdout.write(`${key}\n`);
  } finally {
    await orm.close(true);
  }
}

main(process.argv.slice(2)).catch((err: Error) => {
  process.stderr.write(`${err.message}\n`);
  process.exit(2);
});

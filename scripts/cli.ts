/**
 * Operator CLI: `npm run cli -- --help` lists the commands (scripts/lib/cli.ts; README
 * "Operator CLI"). `api-keys create` prints the new key alone on the last line; `users create`
 * reads the password from stdin (so it never appears in the shell history or process list).
 */
import { runCli } from './lib/cli';

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('Password (input is echoed; pipe it in to avoid that): ');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

runCli(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  readStdin,
}).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  },
);

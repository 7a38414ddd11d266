/**
 * `npm run bench -- <name>` runs bench/<name>.bench.ts. Each benchmark measures our path
 * and a baseline in the same run and prints `ratio=<ours/baseline>` as its last line.
 *
 * `--otel` runs it with tracing on (docs/observability.md): the OpenTelemetry SDK starts
 * here, before the bench loads the service, and exports (http/protobuf, as by default) to
 * a local endpoint that drops the spans (support/span-sink.ts); processes the bench spawns
 * inherit the setting. The instrumentations patch every user of koa, pg and undici in the
 * process, the baselines' too: the cost is ours with `--otel` against ours without (req/s,
 * CPU µs per request, latencies), not the ratio of one run.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';

const available = readdirSync(__dirname)
  .filter((f) => f.endsWith('.bench.ts'))
  .map((f) => f.replace(/\.bench\.ts$/, ''));

async function main() {
  const name = process.argv[2];
  if (!name || !available.includes(name)) {
    process.stderr.write(`usage: npm run bench -- <${available.join('|')}>\n`);
    process.exit(2);
  }
  const args = process.argv.slice(3);
  const sink = args.includes('--otel') ? await startTracingForBench() : undefined;
  const mod = (await import(path.join(__dirname, `${name}.bench.ts`))) as { run(args: string[]): Promise<void> };
  await mod.run(args.filter((a) => a !== '--otel'));
  if (sink) {
    const { requests, bytes } = sink.stats();
    process.stdout.write(`tracing on: ${requests} OTLP exports received, ${(bytes / 1024).toFixed(0)} KiB (the cost: our figures above against a run without --otel)\n`);
  }
  process.exit(0);
}

/** Tracing on for this process and its children, exporting to a local sink; before any service module loads. */
async function startTracingForBench() {
  const { startSpanSink } = await import('./support/span-sink');
  const sink = await startSpanSink();
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = sink.url;
  process.env.OTEL_SERVICE_NAME ??= 'workflow-automation-bench';
  await import('../src/telemetry/preload');
  return sink;
}

main().catch((err: Error) => {
  process.stderr.write(`${err.stack ?? err.message}\n`);
  process.exit(1);
});

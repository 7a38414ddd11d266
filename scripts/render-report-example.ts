/**
 * Renders the example report of docs/reports.md: the fixture of test/reports/report-fixture.ts
 * (two survey workflows, hourly over November 2026) as a PDF, and its first page as
 * docs/report-example.png. Run after changing the PDF's layout:
 *   npx tsx scripts/render-report-example.ts [path of the PDF to keep too]
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { renderReportPdf } from '../src/modules/reports/report.pdf';
import { pdfPages } from '../test/helpers/pdf-pages';
import { fixtureReport } from '../test/reports/report-fixture';

async function main() {
  const out = new PassThrough();
  const pdf = buffer(out);
  renderReportPdf(fixtureReport(), out);
  const bytes = await pdf;
  if (process.argv[2]) writeFileSync(process.argv[2], bytes);
  const [first] = await pdfPages(bytes, { scale: 1.5 });
  const target = path.join(__dirname, '..', 'docs', 'report-example.png');
  writeFileSync(target, first!.png);
  console.log(`wrote ${target}`);
}

void main();

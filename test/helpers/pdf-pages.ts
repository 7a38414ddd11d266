/**
 * A PDF as a reader meets it: per page its size, its text runs with their boxes (pdf.js's
 * text layer) and a PNG of the page (pdf-parse's screenshot: pdf.js drawing on
 * @napi-rs/canvas), with the share of inked pixels per band of the image. Runs in a child
 * Node process, as test/helpers/pdf-text.ts does (pdf.js loads its worker with a dynamic
 * `import()`, which jest's module system refuses).
 */
import { execFile } from 'node:child_process';

export interface PdfTextRun {
  str: string;
  x: number;
  /** Bottom of the run (its baseline), from the page's bottom edge, as PDF coordinates are. */
  y: number;
  width: number;
  height: number;
}

export interface PdfPage {
  width: number;
  height: number;
  text: string;
  runs: PdfTextRun[];
  /** The page drawn at `scale` (1 = one pixel per point). */
  png: Buffer;
  /** Share (0–1) of non-white pixels in the PNG's left, right, top and bottom margins of `marginPt` points. */
  marginInk: { left: number; right: number; top: number; bottom: number };
  /** Share of non-white pixels on the whole page. */
  ink: number;
}

const INSPECT = `
const { PDFParse } = require('pdf-parse');
const { createCanvas, loadImage } = require('@napi-rs/canvas');
const [scale, marginPt, withPng] = JSON.parse(process.argv[1]);
const chunks = [];
process.stdin.on('data', (c) => chunks.push(c)).on('end', async () => {
  const data = Buffer.concat(chunks);
  // The standard 14 fonts' metrics and outlines, so Helvetica draws as Helvetica (Liberation Sans), not a fallback.
  const standardFontDataUrl = require('node:path').join(require.resolve('pdfjs-dist/package.json'), '..', 'standard_fonts') + '/';
  const { getDocument } = await import('pdfjs-dist/legacy/build/pdf.mjs');
  const doc = await getDocument({ data: new Uint8Array(data), verbosity: 0, standardFontDataUrl }).promise;
  const parser = new PDFParse({ data, standardFontDataUrl });
  const shots = withPng ? await parser.getScreenshot({ scale, imageDataUrl: false }) : null;
  const pages = [];
  for (let i = 1; i <= doc.numPages; i++) {
    const page = await doc.getPage(i);
    const [, , width, height] = page.view;
    const content = await page.getTextContent();
    const runs = content.items.filter((it) => it.str.trim()).map((it) => ({ str: it.str, x: it.transform[4], y: it.transform[5], width: it.width, height: it.height }));
    if (!shots) {
      pages.push({ width, height, runs, text: runs.map((r) => r.str).join(' ') });
      continue;
    }
    const png = Buffer.from(shots.pages[i - 1].data);
    const img = await loadImage(png);
    const canvas = createCanvas(img.width, img.height);
    const ctx = canvas.getContext('2d');
    ctx.drawImage(img, 0, 0);
    const px = ctx.getImageData(0, 0, img.width, img.height).data;
    const inkIn = (x0, y0, x1, y1) => {
      let ink = 0, all = 0;
      for (let y = Math.floor(y0); y < Math.floor(y1); y++) for (let x = Math.floor(x0); x < Math.floor(x1); x++) {
        const o = (y * img.width + x) * 4;
        all++;
        if (px[o] < 235 || px[o + 1] < 235 || px[o + 2] < 235) ink++;
      }
      return all ? ink / all : 0;
    };
    const m = marginPt * scale;
    pages.push({
      width, height, runs, text: runs.map((r) => r.str).join(' '), png: png.toString('base64'),
      marginInk: { left: inkIn(0, 0, m, img.height), right: inkIn(img.width - m, 0, img.width, img.height), top: inkIn(0, 0, img.width, m), bottom: inkIn(0, img.height - m, img.width, img.height) },
      ink: inkIn(0, 0, img.width, img.height),
    });
  }
  await parser.destroy();
  process.stdout.write(JSON.stringify(pages));
});
`;

/** The pages' text runs, and with `png` (the default) their images and ink. */
export async function pdfPages(data: Buffer, opts: { scale?: number; marginPt?: number; png?: boolean } = {}): Promise<PdfPage[]> {
  const args = JSON.stringify([opts.scale ?? 1, opts.marginPt ?? 30, opts.png ?? true]);
  const out = await new Promise<string>((resolve, reject) => {
    const child = execFile(process.execPath, ['-e', INSPECT, args], { maxBuffer: 256 * 1024 * 1024 }, (err, stdout, stderr) =>
      err ? reject(new Error(`pdf inspection failed: ${stderr || err.message}`)) : resolve(stdout),
    );
    child.stdin!.end(data);
  });
  return (JSON.parse(out) as Array<Omit<PdfPage, 'png'> & { png?: string }>).map((p) => ({ ...p, png: Buffer.from(p.png ?? '', 'base64') }));
}

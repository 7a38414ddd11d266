/**
 * A PDF's text as pdf.js extracts it (pdf-parse 2 wraps the current pdfjs-dist). It runs in a
 * child Node process: pdf.js loads its worker with a dynamic `import()`, which jest's module
 * system refuses without --experimental-vm-modules.
 */
import { execFile } from 'node:child_process';

const EXTRACT = `
const { PDFParse } = require('pdf-parse');
const chunks = [];
process.stdin.on('data', (c) => chunks.push(c)).on('end', async () => {
  const parser = new PDFParse({ data: Buffer.concat(chunks) });
  try {
    process.stdout.write((await parser.getText()).text);
  } finally {
    await parser.destroy();
  }
});
`;

export async function pdfText(data: Buffer): Promise<string> {
  return await new Promise((resolve, reject) => {
    const child = execFile(process.execPath, ['-e', EXTRACT], { maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) =>
      err ? reject(new Error(`pdf text extraction failed: ${stderr || err.message}`)) : resolve(stdout),
    );
    child.stdin!.end(data);
  });
}

/**
 * The fenced code blocks of a markdown file, with their info string (```bash tested → lang
 * `bash`, flags `tested`). The guides mark the blocks the suite runs (test/docs).
 */
import { readFileSync } from 'node:fs';

export interface CodeBlock {
  lang: string;
  flags: string[];
  code: string;
  /** 1-based line of the opening fence, for failure messages. */
  line: number;
}

export function codeBlocks(file: string): CodeBlock[] {
  const lines = readFileSync(file, 'utf8').split('\n');
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(`{3,})(\S*)\s*(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && !lines[j]!.startsWith(open[1]!)) body.push(lines[j++]!);
    blocks.push({ lang: open[2]!, flags: open[3]!.split(/\s+/).filter(Boolean), code: body.join('\n') + '\n', line: i + 1 });
    i = j;
  }
  return blocks;
}

export const testedBlocks = (file: string, lang?: string): CodeBlock[] =>
  codeBlocks(file).filter((b) => b.flags.includes('tested') && (lang === undefined || b.lang === lang));

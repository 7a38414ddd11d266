/** `npm run docs:config`: writes docs/configuration.md from the config schema and its descriptions (scripts/lib/config-docs.ts). */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { CONFIG_DOCS_FILE, renderConfigDocs } from './lib/config-docs';

const out = path.join(__dirname, '..', CONFIG_DOCS_FILE);
writeFileSync(out, renderConfigDocs());
console.log(`wrote ${CONFIG_DOCS_FILE}`);

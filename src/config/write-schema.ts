// `npm run schema`: writes config/noderouter.schema.json from the config's shape and
// the built-in plugins' option schemas. A test fails while the shipped file differs.

import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { packageRoot } from '../package-root.js';
import { SCHEMA_FILE, schemaText } from './json-schema.js';

const file = join(packageRoot(), SCHEMA_FILE);
await writeFile(file, await schemaText());
process.stdout.write(`wrote ${file}\n`);

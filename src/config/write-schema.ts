// `npm run schema`: writes config/noderouter.schema.json from the config's shape and
// the built-in plugins' option schemas, and the settings tables of
// docs/configuration.md from the shape. A test fails while either differs.

import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { packageRoot } from '../package-root.js';
import { SCHEMA_FILE, schemaText } from './json-schema.js';
import { REFERENCE_FILE, withReference } from './reference.js';

const schema = join(packageRoot(), SCHEMA_FILE);
await writeFile(schema, await schemaText());
process.stdout.write(`wrote ${schema}\n`);

const reference = join(packageRoot(), REFERENCE_FILE);
await writeFile(reference, withReference(await readFile(reference, 'utf8')));
process.stdout.write(`wrote ${reference}\n`);

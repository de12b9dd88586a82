#!/usr/bin/env node
// The `noderouter` command. `npm install` compiles TypeScript to dist/ (the
// `prepare` script); this file only hands over to the compiled entry.
import '../dist/src/bin.js';

#!/usr/bin/env node
// The `chorus` command. An installed package runs its compiled JavaScript (dist/, which `npm pack` builds): no tsx in
// any process. A checkout runs its TypeScript sources through tsx (tests and development: nothing to go stale), unless
// CHORUS_COMPILED=1 asks for its build (`npm start` builds incrementally, then sets it).
import { existsSync } from 'node:fs';

const sources = new URL('../src/cli/main.ts', import.meta.url);
const compiled = new URL('../dist/src/cli/main.js', import.meta.url);
if (existsSync(sources) && process.env.CHORUS_COMPILED !== '1') {
  const { register } = await import('tsx/esm/api');
  register();
  await import(sources.href);
} else if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  process.stderr.write(`chorus: no build at ${compiled.pathname}: run \`npm run build\` in the package first\n`);
  process.exit(1);
}

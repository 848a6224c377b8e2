// Imports each module named on the command line in order, then records every CommonJS module loaded
// (require() calls bypass the resolve hook), so watchModules sees both kinds.
import { appendFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

for (const entry of process.argv.slice(2)) await import(pathToFileURL(entry).href);
const cache = createRequire(import.meta.url).cache;
const urls = Object.keys(cache).map((file) => pathToFileURL(file).href);
if (process.env.MODULE_WATCH_LOG !== undefined && urls.length > 0)
  appendFileSync(process.env.MODULE_WATCH_LOG, `${urls.join('\n')}\n`);

import { expect, test } from 'vitest';
import { packagesAmong, watchModules } from '../support/loaded-modules.js';

// `import 'coven-automata/daemon'` is the client (node:http and an SSE parser): an embedder that only talks to
// a running daemon loads no HTTP framework; startDaemon imports the server when it runs.
test("import 'coven-automata/daemon' loads DaemonClient and neither fastify nor pino", () => {
  const { urls } = watchModules(['src/daemon/index.ts']);
  expect(urls.some((url) => url.endsWith('/src/daemon/client.ts'))).toBe(true);
  expect(urls.some((url) => url.includes('/node_modules/eventsource-parser/'))).toBe(true);
  expect(packagesAmong(urls, ['fastify', 'pino', 'prom-client'])).toEqual([]);
  expect(urls.filter((url) => url.endsWith('/src/daemon/server.ts'))).toEqual([]);
}, 60_000);

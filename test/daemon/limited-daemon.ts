/**
 * A daemon in a process of its own, for the connection-exhaustion test: the test gives it a small open-file limit
 * (the shell's `ulimit -n`), so a few hundred connections exhaust it as ~20,000 exhaust a default one, and its
 * connection limits through COVEN_TEST_LIMITS (JSON). Prints one JSON line (socket, url, token) once it serves;
 * stops on SIGTERM.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine } from '../../src/engine/engine.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { openStore } from '../../src/store/open-store.js';
import { startDaemon } from '../../src/daemon/index.js';

const store = await openStore(join(mkdtempSync(join(tmpdir(), 'coven-limited-')), 'automations.json'));
const engine = createEngine({ store, runtimes: [new SimulatedRuntime()] });
const daemon = await startDaemon({
  engine,
  store,
  storeFile: store.file,
  listen: { host: '127.0.0.1', port: 0 },
  limits: JSON.parse(process.env.COVEN_TEST_LIMITS ?? '{}') as Record<string, number>,
});
console.log(JSON.stringify({ socketPath: daemon.socketPath, url: daemon.url, token: daemon.token }));
process.once('SIGTERM', () => {
  void daemon.close().then(() => store.close());
});

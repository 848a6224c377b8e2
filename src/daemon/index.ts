/**
 * The daemon: the engine's command API on a Unix socket beside the store and on loopback TCP, and its client.
 * `import 'coven-automata/daemon'` loads the client only; the HTTP framework loads when a daemon starts.
 *
 * @example
 * ```ts
 * import { openStore, createEngine } from 'coven-automata';
 * import { startDaemon, DaemonClient } from 'coven-automata/daemon';
 *
 * const store = await openStore('automations.json');
 * const engine = createEngine({ store, runtimes });
 * engine.start();
 * const listen = { host: '127.0.0.1', port: 8790 };
 * const daemon = await startDaemon({ engine, store, storeFile: store.file, listen });
 * const client = await DaemonClient.connect('automations.json'); // from any process of the same user
 * ```
 * @packageDocumentation
 */
import type { Daemon, DaemonOptions } from './context.js';

export type { Daemon, DaemonContext, DaemonOptions, DaemonPlugin } from './context.js';
export { DaemonClient, type DaemonTarget, type StreamedEvent } from './client.js';
export { isTrusted, authorityRequired, READ_COMMANDS, type RouteTrust } from './trust.js';
export { daemonRecordPath, socketPathFor, tokenPath, type DaemonRecord } from './files.js';
export type { ConnectionLimits } from './connection-limits.js';

/**
 * Serves a running engine's commands (see {@link DaemonOptions}): the Unix socket beside the store, loopback
 * TCP with `listen`, and the routes `plugins` add. The caller owns the store and starts and stops the engine.
 *
 * @example
 * ```ts
 * const daemon = await startDaemon({ engine, store, storeFile: store.file });
 * console.log(`serving on ${daemon.socketPath}`);
 * await daemon.close();
 * ```
 */
export async function startDaemon(options: DaemonOptions): Promise<Daemon> {
  const { startServer } = await import('./server.js');
  return startServer(options);
}

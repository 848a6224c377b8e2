import type { Command } from 'commander';
import type { Engine } from '../engine/engine.js';
import type { FileStore } from '../store/open-store.js';
import { DaemonClient, startDaemon, type DaemonPlugin } from '../daemon/index.js';
import { CliError, DEFAULT_STORE, withLocalEngine, type CliOptions } from './context.js';

/** What `start` takes beyond the global options. */
export interface StartOptions {
  listen?: string;
}

/** Hosts `--listen` accepts; anything else is refused before the store is opened. */
const LOOPBACK = new Set(['127.0.0.1', '::1', '[::1]']);

/** `127.0.0.1:8790` or `[::1]:8790` → the loopback host and port; anything else is a one-line usage error. */
export function parseListen(text: string | undefined): { host: string; port: number } | undefined {
  if (text === undefined) return undefined;
  const match = /^(.*):(\d{1,5})$/.exec(text);
  const host = match?.[1] ?? text;
  if (!LOOPBACK.has(host))
    throw new CliError(
      `--listen: ${JSON.stringify(host)} is not a loopback address; use 127.0.0.1:PORT or [::1]:PORT ` +
        '(the daemon never listens beyond this machine)',
    );
  const port = Number(match![2]);
  if (port > 65_535) throw new CliError(`--listen: ${port} is not a TCP port`);
  return { host: host === '[::1]' ? '::1' : host, port };
}

/**
 * The options `start` declares. The integrator adds the observability and dashboard helpers' options
 * (`--log-format`, `--inspect`, ...) here, beside `--listen`.
 */
export function declareStartOptions(command: Command): Command {
  return command.option(
    '--listen <host:port>',
    'also serve HTTP on loopback TCP (127.0.0.1:PORT or [::1]:PORT); mutations there need the printed token',
  );
}

/**
 * The plugins `start` serves beside the command API. The integrator registers the observability plugin
 * (/metrics, /api/v1/doctor) and the dashboard plugin (/, /assets/*) here, reading their options from `cmd`.
 */
export async function startPlugins(_cmd: StartOptions): Promise<DaemonPlugin[]> {
  return [];
}

function passLine(pass: Awaited<ReturnType<Engine['tick']>>): string | undefined {
  if (pass.planned + pass.launched + pass.settled === 0 && pass.errors.length === 0) return undefined;
  const errors = pass.errors.length > 0 ? `, errors: ${pass.errors.map((e) => e.message).join('; ')}` : '';
  return `${pass.at} planned ${pass.planned}, launched ${pass.launched}, settled ${pass.settled}${errors}`;
}

/**
 * `start` on an open store: the engine's passes, the daemon serving every command on the socket beside the
 * store (and on loopback TCP with --listen), until SIGINT/SIGTERM. Then it stops accepting, lets the running
 * pass finish, closes the listeners, removes the socket, token and daemon.json, and the caller releases the lock.
 */
async function serve(engine: Engine, store: FileStore, cmd: StartOptions): Promise<number> {
  const listen = parseListen(cmd.listen);
  let lastPassAt: Date | undefined;
  const daemon = await startDaemon({
    engine,
    store,
    storeFile: store.file,
    ...(listen === undefined ? {} : { listen }),
    plugins: await startPlugins(cmd),
    lastPassAt: () => lastPassAt,
  });
  console.log(`engine running on ${store.file} (Ctrl-C to stop)`);
  console.log(`serving on ${daemon.socketPath}`);
  if (daemon.url !== undefined) console.log(`dashboard: ${daemon.url}/?token=${daemon.token}`);
  engine.start((pass) => {
    lastPassAt = new Date();
    const line = passLine(pass);
    if (line !== undefined) console.log(line);
  });
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await daemon.close();
  await engine.stop();
  console.log('stopped; store lock released');
  return 0;
}

/** `start`: refuses a bad --listen and a store a daemon already serves before opening anything. */
export async function runStart(options: CliOptions, cmd: StartOptions): Promise<number> {
  parseListen(cmd.listen);
  const running = await DaemonClient.connect(options.store ?? DEFAULT_STORE);
  if (running !== undefined) {
    const health = await running.get<{ pid: number; storeFile: string }>('/healthz');
    throw new CliError(`a daemon (process ${health.pid}) already serves ${health.storeFile}`);
  }
  return withLocalEngine(options, (engine, store) => serve(engine, store, cmd));
}

import type { Command } from 'commander';
import type { Engine } from '../engine/engine.js';
import type { FileStore } from '../store/open-store.js';
import { DaemonClient, startDaemon, type DaemonPlugin } from '../daemon/index.js';
import type { EngineLogger } from '../observability/logger.js';
import type { EngineMetrics } from '../observability/metrics.js';
import { CliError, parseRetention, withLocalEngine, type CliOptions } from './context.js';
import { storeLocation } from './store-location.js';
import { dirname } from 'node:path';
import { makePrivateFolder } from '../store/private-files.js';
import { optionalPackage } from './optional-package.js';

/** What `start` takes beyond the global options. */
export interface StartOptions {
  listen?: string;
  logFormat?: string;
  /** `--inspect [port]`: true for the default port, or the port given. */
  inspect?: boolean | string;
  /** `--public-reads`: loopback TCP without the token reads prompts, outputs and definition bodies too. */
  publicReads?: boolean;
  /** `--otel`: spans through the process's global OpenTelemetry tracer provider. */
  otel?: boolean;
}

const INSPECT_PORT = 8787;

function parseLogFormat(text: string | undefined): 'human' | 'json' {
  if (text === undefined || text === 'human' || text === 'json') return text ?? 'human';
  throw new CliError(`--log-format: expected human or json, not ${JSON.stringify(text)}`);
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
  return command
    .option(
      '--listen <host:port>',
      'also serve HTTP on loopback TCP (127.0.0.1:PORT or [::1]:PORT); mutations there need the printed token',
    )
    .option(
      '--public-reads',
      'let loopback TCP callers without the token read prompts, session output and definition bodies ' +
        '(default: they get redacted answers; any local user can reach that port)',
    )
    .option('--log-format <format>', 'human lines (default) or json (one pino record per line)')
    .option('--inspect [port]', `feed the Stately inspector live from a relay on 127.0.0.1 (default ${INSPECT_PORT})`)
    .option(
      '--otel',
      'OpenTelemetry spans (plan, claim, dispatch, run, settle) through the global tracer provider an SDK registered ' +
        '(NODE_OPTIONS=--import ./your-otel-setup.mjs); needs npm install @opentelemetry/api',
    );
}

/**
 * The plugins `start` serves beside the command API: /metrics and /api/v1/doctor over the engine's metrics, and
 * the dashboard (/, /assets/*).
 */
export async function startPlugins(metrics: EngineMetrics, options: CliOptions): Promise<DaemonPlugin[]> {
  // Loaded when a daemon starts, so every other command starts without prom-client, pino and @fastify/static.
  const [{ observabilityRoutes }, { dashboardRoutes }] = await Promise.all([
    import('../daemon/observability-routes.js'),
    import('../daemon/dashboard-routes.js'),
  ]);
  const retention = parseRetention(options.retention);
  return [observabilityRoutes({ metrics, ...(retention === undefined ? {} : { retention }) }), dashboardRoutes()];
}

/** Startup and shutdown lines: plain text for people (and the tests that wait on them), a record under json. */
function announcer(logger: EngineLogger, format: 'human' | 'json') {
  return (message: string, fields: Record<string, unknown> = {}) =>
    format === 'json' ? logger.info(message, fields) : console.log(message);
}

/** The OpenTelemetry subpath, or a usage error naming the package to install. */
const loadOtel = () => optionalPackage('@opentelemetry/api', '--otel', () => import('../observability/otel.js'));

/** `--otel`: the engine's transitions become spans of the global tracer provider (a no-op until an SDK registers). */
async function traceIfAsked(engine: Engine, cmd: StartOptions): Promise<boolean> {
  if (cmd.otel !== true) return false;
  engine.services.tracing = (await loadOtel()).openTelemetryTracing();
  return true;
}

async function attachInspectorIfAsked(engine: Engine, cmd: StartOptions) {
  if (cmd.inspect === undefined || cmd.inspect === false) return undefined;
  const port = cmd.inspect === true ? INSPECT_PORT : Number(cmd.inspect);
  const { attachInspector } = await import('./inspect-command.js');
  return attachInspector(engine, { port });
}

/**
 * `start` on an open store: the engine's passes, the daemon serving every command on the socket beside the
 * store (and on loopback TCP with --listen), until SIGINT/SIGTERM. Then it stops accepting, lets the running
 * pass finish, closes the listeners, removes the socket, token and daemon.json, and the caller releases the lock.
 */
async function serve(
  engine: Engine,
  store: FileStore,
  options: CliOptions,
  cmd: StartOptions & { anchor: string },
): Promise<number> {
  const listen = parseListen(cmd.listen);
  const format = parseLogFormat(cmd.logFormat);
  const [{ createEngineLogger }, { createEngineMetrics }] = await Promise.all([
    import('../observability/logger.js'),
    import('../observability/metrics.js'),
  ]);
  const logger = createEngineLogger({ format });
  const say = announcer(logger, format);
  const metrics = createEngineMetrics({ engine, store });
  let lastPassAt: Date | undefined;
  // Before the daemon takes commands, so every transition it commits is traced.
  const traced = await traceIfAsked(engine, cmd);
  const daemon = await startDaemon({
    engine,
    store,
    storeFile: cmd.anchor,
    ...(listen === undefined ? {} : { listen }),
    publicReads: cmd.publicReads === true,
    plugins: await startPlugins(metrics, options),
    lastPassAt: () => lastPassAt,
  });
  const inspector = await attachInspectorIfAsked(engine, cmd);
  if (traced) say('OpenTelemetry: spans go to the global tracer provider', { otel: true });
  say(`engine running on ${store.file} (Ctrl-C to stop)`, { storeFile: store.file });
  say(`serving on ${daemon.socketPath}`, { socketPath: daemon.socketPath });
  if (daemon.url !== undefined) say(`dashboard: ${daemon.url}/?token=${daemon.token}`, { url: daemon.url });
  if (inspector !== undefined) say(`Stately inspector: ${inspector.url}`, { inspector: inspector.url });
  engine.start((pass) => {
    lastPassAt = new Date();
    metrics.observePass(pass);
    logger.onPass(pass);
  });
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await daemon.close();
  await engine.stop();
  await inspector?.close();
  metrics.dispose();
  say('stopped; store lock released');
  return 0;
}

/**
 * `start`: refuses a bad --listen, a missing OpenTelemetry API (--otel) and a store a daemon already serves before
 * opening anything.
 */
export async function runStart(options: CliOptions, cmd: StartOptions): Promise<number> {
  parseListen(cmd.listen);
  parseLogFormat(cmd.logFormat);
  if (cmd.otel === true) await loadOtel();
  const { anchor } = storeLocation(options);
  const running = await DaemonClient.connect(anchor);
  if (running !== undefined) {
    const health = await running.get<{ pid: number; storeFile: string }>('/healthz');
    throw new CliError(`a daemon (process ${health.pid}) already serves ${health.storeFile}`);
  }
  // The socket, token and daemon.json live beside the anchor: a database's anchor folder may not exist yet.
  makePrivateFolder(dirname(anchor));
  return withLocalEngine(options, (engine, store) => serve(engine, store, options, { ...cmd, anchor }));
}

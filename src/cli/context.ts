import { AtomicFileDelivery, checkDeliveryMode } from '../runtime/output-delivery.js';
import { makePrivateFolder } from '../store/private-files.js';
import { join, resolve } from 'node:path';
import { defaultRequirements } from '../command-handler/context.js';
import type { CommandResponse } from '../command-handler/envelope.js';
import { createEngine, type Engine } from '../engine/engine.js';
import { OPERATOR_CALLER } from '../domain/read-acl.js';
import { ENV_NAME } from '../runtime/child-env.js';
import { errorLine } from './error-line.js';
import { ChildProcessRuntime } from '../runtime/child-process-runtime.js';
import type { SupervisedRuntime } from '../runtime/supervised-runtime.js';
import { confineCwd } from '../command-handler/cwd-requirements.js';
import { openStore, type FileStore, type FileStoreKind, type PostgresUrl } from '../store/open-store.js';
import { storeLocation, type StoreLocation } from './store-location.js';
import { StoreLockedError } from '../store/store.js';
import type { StreamRef } from '../changefeed/event-envelope.js';
import { DaemonClient } from '../daemon/client.js';
import { follow, type FollowedEvent } from '../daemon/follow.js';
import { latestAttempt, type LatestAttempt } from '../daemon/run-reads.js';
import { RETENTION_CLASSES, RetentionPolicy, type RetentionClass, type RetentionOptions } from '../retention/policy.js';

export { DEFAULT_STORE } from './store-location.js';
/** What `start` and CLI launches run per attempt unless --command says otherwise: prints the prompt. */
export const DEFAULT_COMMAND = 'printf "%s\\n" "$COVEN_PROMPT"';

export interface CliOptions {
  store?: string;
  storeKind?: FileStoreKind;
  json?: boolean;
  command?: string;
  retention?: string;
  /** Repeatable: folders sessions may run in (default: the store's folder). */
  cwdRoot?: string[];
  /** Repeatable: engine environment variables children receive beyond the allowlist. */
  passEnv?: string[];
  /** Where atomic outputTargets are delivered (default: `deliveries` beside the store). */
  deliveryRoot?: string;
  /** The octal mode of delivered files (default 0600). */
  deliveryFileMode?: string;
  /** The octal mode of folders a delivery creates (default 0700). */
  deliveryFolderMode?: string;
}

/**
 * The folder atomic outputTargets resolve under: `--delivery-root`, else `deliveries` in the store's folder, a
 * folder of its own so no target can name the store file or the sessions beside it.
 */
export const deliveryRootOf = (options: CliOptions, folder: string): string =>
  options.deliveryRoot === undefined ? join(folder, 'deliveries') : resolve(options.deliveryRoot);

/** The CLI's error for user mistakes: printed as one line, no stack trace, exit code 1. */
export class CliError extends Error {}

/** An octal mode option (`0644` or `644`) checked as a delivery mode, or undefined when not given. */
function deliveryMode(flag: string, text: string | undefined, required: number): number | undefined {
  if (text === undefined) return undefined;
  if (!/^0?[0-7]{3}$/.test(text)) throw new CliError(`${flag}: expected an octal mode such as 0640; got ${text}`);
  try {
    return checkDeliveryMode(Number.parseInt(text, 8), required, flag);
  } catch (error) {
    throw new CliError((error as Error).message);
  }
}

/**
 * The delivery port under {@link deliveryRootOf}: files 0600 in folders 0700 unless `--delivery-file-mode` and
 * `--delivery-folder-mode` widen them.
 */
export function cliDelivery(options: CliOptions, folder: string): AtomicFileDelivery {
  const fileMode = deliveryMode('--delivery-file-mode', options.deliveryFileMode, 0o600);
  const folderMode = deliveryMode('--delivery-folder-mode', options.deliveryFolderMode, 0o700);
  return new AtomicFileDelivery(deliveryRootOf(options, folder), {
    ...(fileMode === undefined ? {} : { fileMode }),
    ...(folderMode === undefined ? {} : { folderMode }),
  });
}

/**
 * `--retention off` or `--retention standard=7,ephemeral=0.5` (days per class; `never` keeps a class for
 * good), checked once here so a typo is a usage error, not a daemon that silently keeps or drops history.
 */
export function parseRetention(text: string | undefined): RetentionOptions | false | undefined {
  if (text === undefined) return undefined;
  if (text === 'off') return false;
  const windowDays: Partial<Record<RetentionClass, number | null>> = {};
  for (const part of text.split(',')) {
    const [name, value] = part.split('=') as [string, string | undefined];
    if (!RETENTION_CLASSES.includes(name as RetentionClass) || value === undefined || value === '') {
      throw new CliError(
        `--retention: expected off or <class>=<days|never>[,...] with classes ${RETENTION_CLASSES.join(', ')}; ` +
          `got ${JSON.stringify(part)}`,
      );
    }
    windowDays[name as RetentionClass] = value === 'never' ? null : Number(value);
  }
  try {
    RetentionPolicy.from({ windowDays });
  } catch (error) {
    throw new CliError(`--retention: ${(error as Error).message}`);
  }
  return { windowDays };
}

/** Commander's collector for a repeatable option. */
export const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/**
 * The CLI's runtime: each attempt runs the command in a shell, confined to `--cwd-root` folders (default: the
 * store's folder, which is also where a definition without a cwd runs), with the allowlisted environment plus
 * `--pass-env` names. On a file store its evidence is files in `<store folder>/sessions` (one host); on
 * PostgreSQL it is kept in the store's database, where every engine of the store reads it (SupervisedRuntime).
 * Answers the runtime and what closes it.
 */
async function cliRuntime(
  options: CliOptions,
  location: StoreLocation,
): Promise<{ runtime: ChildProcessRuntime | SupervisedRuntime; close: () => Promise<void> }> {
  const passEnv = options.passEnv ?? [];
  const bad = passEnv.find((name) => !ENV_NAME.test(name));
  if (bad !== undefined) throw new CliError(`--pass-env: ${JSON.stringify(bad)} is not an environment variable name`);
  const cwdRoots =
    options.cwdRoot === undefined || options.cwdRoot.length === 0
      ? [location.folder]
      : options.cwdRoot.map((root) => resolve(root));
  const host = engineHost();
  const common = {
    ...(host === undefined ? {} : { host }),
    runtimeId: 'coven-code',
    command: options.command ?? process.env.COVEN_RUNTIME_COMMAND ?? DEFAULT_COMMAND,
    cwdRoots,
    passEnv,
  };
  if (location.kind === 'postgres') {
    // A database has no folder of its own: the store's folder is made only when it is the default cwd root (the
    // file runtime makes it with its sessions; `start` makes it for its socket).
    if (options.cwdRoot === undefined || options.cwdRoot.length === 0) makePrivateFolder(location.folder);
    const { openSupervisedRuntime } = await import('../runtime/supervised-runtime-open.js');
    return openSupervisedRuntime(location.url, common, (error) => new CliError(`--cwd-root: ${error.message}`));
  }
  try {
    const runtime = new ChildProcessRuntime({ ...common, sessionsDir: join(location.folder, 'sessions') });
    return { runtime, close: async () => undefined };
  } catch (error) {
    throw new CliError(`--cwd-root: ${(error as Error).message}`);
  }
}

/**
 * The host name this engine's owner lease and its runtime's evidence name: `COVEN_HOST` when set (where host
 * names repeat across machines or containers), else the machine's.
 */
function engineHost(): string | undefined {
  const host = process.env.COVEN_HOST;
  if (host === undefined || host === '') return undefined;
  if (!/^[A-Za-z0-9._:-]{1,253}$/.test(host))
    throw new CliError(`COVEN_HOST: ${JSON.stringify(host)} is not a host name (letters, digits, . _ : -)`);
  return host;
}

/**
 * Opens the store `--store` names: a file (its folder made first, 0700 like every folder a store makes, since
 * it will hold the token, the sessions and the deliveries) or a PostgreSQL database.
 */
export function openLocation(location: StoreLocation, options: CliOptions): Promise<FileStore> {
  if (location.kind === 'postgres') return openStore(location.url as PostgresUrl);
  makePrivateFolder(location.folder);
  return openStore(location.file, options.storeKind);
}

/**
 * Opens the store (taking its lock) and an engine with the child-process runtime for the duration of `body`:
 * what `start` runs on. Every other command goes through {@link withEngine}, which asks a daemon first.
 */
export async function withLocalEngine<T>(
  options: CliOptions,
  body: (engine: Engine, store: FileStore) => Promise<T>,
): Promise<T> {
  const location = storeLocation(options);
  return onStore(options, location, await openLocation(location, options), body);
}

async function onStore<T>(
  options: CliOptions,
  location: StoreLocation,
  store: FileStore,
  body: (engine: Engine, store: FileStore) => Promise<T>,
): Promise<T> {
  const folder = location.folder;
  let closeRuntime = async () => undefined as void;
  try {
    const { runtime, close } = await cliRuntime(options, location);
    closeRuntime = close;
    const retention = parseRetention(options.retention);
    const requirements = confineCwd([runtime], defaultRequirements([runtime.runtimeId]));
    const host = engineHost();
    const engine = createEngine({
      store,
      runtimes: [runtime],
      ...(host === undefined ? {} : { host }),
      requirements,
      delivery: cliDelivery(options, folder),
      ...(retention === undefined ? {} : { retention }),
    });
    return await body(engine, store);
  } finally {
    await store.close();
    await closeRuntime();
  }
}

/**
 * What a CLI command needs of the engine, served alike by a daemon that owns the store and by an engine the
 * CLI opened itself, so a command prints the same either way.
 */
export interface CliEngine {
  readonly commands: { handle(raw: unknown): Promise<CommandResponse> };
  /** The latest attempt of a run, which `retry` names. */
  latestAttempt(runId: string): Promise<LatestAttempt>;
  /** The changefeed live, with the cursor `--after` takes, until `signal` aborts. */
  follow(stream: StreamRef, options: { after: number; signal: AbortSignal }): AsyncIterable<FollowedEvent>;
  /**
   * One engine pass, on a store this process opened (it observes the sessions it launched); undefined when a
   * daemon serves the store, whose own passes settle what it launched.
   */
  readonly pass?: () => Promise<void>;
}

function remoteEngine(client: DaemonClient): CliEngine {
  return {
    commands: { handle: (raw) => client.handle(raw) },
    latestAttempt: (runId) => client.get<LatestAttempt>(`/api/v1/runs/${encodeURIComponent(runId)}/latest-attempt`),
    follow: (stream, { after, signal }) => client.events({ stream, after, signal }),
  };
}

/** The CLI on a store it opened holds the store's lock and file: it is the operator, and reads as one. */
function localEngine(engine: Engine, store: FileStore): CliEngine {
  return {
    commands: { handle: (raw) => engine.commands.handle(raw, OPERATOR_CALLER) },
    latestAttempt: (runId) => store.read((reader) => latestAttempt(reader, runId)),
    follow: (stream, { after, signal }) => follow(engine.commands.changefeed, store, stream, { after, signal }),
    pass: async () => {
      await engine.tick();
    },
  };
}

/**
 * How long a command waits for a store another process holds to be served by a daemon (one that just took
 * the lock writes its record a moment later) or released (a daemon stopping), before it reports the holder.
 */
const LOCKED_WAIT_MS = 3_000;

/**
 * Runs `body` against the daemon that owns the store, over its socket; without one, opens the store (taking
 * its lock) and an engine with the child-process runtime for the duration of `body`, as before daemons.
 */
export async function withEngine<T>(options: CliOptions, body: (engine: CliEngine) => Promise<T>): Promise<T> {
  const location = storeLocation(options);
  const deadline = Date.now() + LOCKED_WAIT_MS;
  for (;;) {
    const client = await DaemonClient.connect(location.anchor);
    if (client !== undefined) return body(remoteEngine(client));
    let store: FileStore;
    try {
      store = await openLocation(location, options);
    } catch (error) {
      if (!(error instanceof StoreLockedError) || Date.now() >= deadline) throw error;
      await new Promise((wake) => setTimeout(wake, 25));
      continue;
    }
    return onStore(options, location, store, async (engine) => body(localEngine(engine, store)));
  }
}

let keys = 0;

export function envelope(
  command: string,
  payload: Record<string, unknown>,
  expectedRevision?: number,
): Record<string, unknown> {
  return {
    schemaVersion: 'coven.automations.v1',
    command,
    adoptionKey: `cli-${Date.now().toString(36)}-${process.pid}-${++keys}`,
    ...(expectedRevision === undefined ? {} : { expectedRevision }),
    origin: { principal: { principalId: `cli:${process.env.USER ?? 'operator'}` }, channel: 'cli' },
    intent: { statement: `coven-automata ${command}` },
    payload,
  };
}

/**
 * Prints a response: JSON with --json, else one readable line (and the result for reads); a rejection's line
 * names the fields that failed (see {@link errorLine}).
 */
export function report(
  response: CommandResponse,
  options: CliOptions,
  human?: (result: Record<string, unknown>) => string,
  out: CliOutput = console,
): number {
  if (options.json === true) {
    out.log(JSON.stringify(response, null, 2));
    return response.outcome === 'rejected' ? 1 : 0;
  }
  if (response.outcome === 'rejected') {
    out.error(errorLine(response.error!));
    return 1;
  }
  const revision = response.revision === undefined ? '' : ` (revision ${response.revision})`;
  out.log(human === undefined ? `${response.command}: ${response.outcome}${revision}` : human(response.result ?? {}));
  return 0;
}

/** Where a command prints: the console, or lines held back (an `apply` rehearsed before a store exists). */
export interface CliOutput {
  log(line: string): void;
  error(line: string): void;
}

import type { FastifyInstance } from 'fastify';
import type { Engine } from '../engine/engine.js';
import type { FileStore } from '../store/open-store.js';
import type { SubscriberRegistry } from './subscribers.js';
import type { ConnectionLimits } from './connection-limits.js';

/** What a daemon's routes and plugins work with. */
export interface DaemonContext {
  /** The running engine (`engine.commands.handle(envelope)` answers every command). */
  engine: Engine;
  /** The store the engine owns. */
  store: FileStore;
  /** Absolute path of the store file. */
  storeFile: string;
  /** The daemon's secret, needed over TCP for mutations and the changefeed. */
  token: string;
  startedAt: Date;
  /** Aborted when the daemon stops: long-lived responses (the changefeed stream) end on it. */
  stopping: AbortSignal;
  /** When the engine's last pass finished (undefined before the first). */
  lastPassAt: () => Date | undefined;
  /** The changefeed streams being served and how far each was delivered (the doctor's events.cursor-lag). */
  subscribers: SubscriberRegistry;
}

/** Extra routes (metrics, doctor, dashboard) register themselves through a plugin. */
export type DaemonPlugin = (app: FastifyInstance, ctx: DaemonContext) => Promise<void>;

export interface DaemonOptions {
  engine: Engine;
  store: FileStore;
  storeFile: string;
  /** TCP, loopback only (127.0.0.1 or ::1; anything else refused). Port 0 picks a free port. */
  listen?: { host: string; port: number };
  plugins?: DaemonPlugin[];
  /**
   * Loopback TCP without the token reads prompts, outputs and definition bodies too (`start --public-reads`).
   * Off by default: such a caller gets redacted answers (see tokenless-view.ts), since every local user, and any
   * web page through a name rebound to 127.0.0.1, reaches that port.
   */
  publicReads?: boolean;
  /** Per-listener connection cap and deadlines; each unset one keeps its default (DEFAULT_CONNECTION_LIMITS). */
  limits?: Partial<ConnectionLimits>;
  /**
   * When the engine's last pass finished; `start` passes the time its pass callback last saw. Without it,
   * /healthz reports `lastPassAt: null`.
   */
  lastPassAt?: () => Date | undefined;
}

export interface Daemon {
  socketPath: string;
  /** `http://127.0.0.1:PORT` with `listen`, else undefined. */
  url: string | undefined;
  token: string;
  /** Stops accepting, ends open streams, closes the listeners and removes the socket, token and daemon.json. */
  close(): Promise<void>;
}

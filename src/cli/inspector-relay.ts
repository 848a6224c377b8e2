import { createRequire } from 'node:module';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Store } from '../store/store.js';
import { InspectionFeed } from '../domain/inspection-feed.js';
import type { InspectionSink } from '../domain/inspection.js';
import { CliError } from './context.js';
import { optionalPackage } from './optional-package.js';

/** The relay listens here and nowhere else: what it serves describes every automation in the store. */
export const RELAY_HOST = '127.0.0.1';
/** How long `close()` waits for connected viewers to receive what was committed before it drops them. */
const DRAIN_MS = 2000;

/** The part of the `ws` package the relay uses (ws ships no types; @statelyai/inspect depends on it). */
interface RelaySocket {
  readonly readyState: number;
  readonly bufferedAmount: number;
  send(data: string): void;
  close(): void;
  terminate(): void;
  on(event: 'close' | 'error', listener: () => void): void;
}
interface RelaySocketServer {
  on(event: 'connection', listener: (socket: RelaySocket) => void): void;
  close(callback: () => void): void;
}
interface WsModule {
  WebSocketServer: new (options: {
    server: Server;
    verifyClient: (info: { origin?: string; req: IncomingMessage }) => boolean;
  }) => RelaySocketServer;
  WebSocket: { OPEN: number };
}
type SendAdapter = { send(event: unknown): void };
type CreateInspector = (adapter: SendAdapter) => InspectionSink;

/** A running relay: its page's URL, the bound address, and how to stop it with every viewer it serves. */
export interface InspectorRelay {
  url: string;
  address: AddressInfo;
  /** Viewers connected now. */
  viewers(): number;
  /** Resolves once every connected viewer was sent everything committed so far. */
  caughtUp(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The page the browser opens: it forwards the relay's messages into the Stately inspector it embeds (that UI
 * is served by stately.ai, so the browser needs internet; the relay itself does not).
 */
function bridgePage(port: number): string {
  return `<!DOCTYPE html>
<html><head><title>coven-automata · Stately inspector</title>
<style>*{margin:0;padding:0}html,body{height:100%}iframe{width:100%;height:100%;border:none}</style></head>
<body><iframe id="inspector" src="https://stately.ai/inspect"></iframe>
<script>
  const iframe = document.getElementById('inspector');
  const buffer = [];
  let connected = false;
  window.addEventListener('message', (e) => {
    if (e.data && e.data.type === '@statelyai.connected') {
      connected = true;
      for (const event of buffer.splice(0)) iframe.contentWindow.postMessage(event, '*');
    }
  });
  const ws = new WebSocket('ws://${RELAY_HOST}:${port}');
  ws.onmessage = (event) => {
    const data = JSON.parse(event.data);
    if (connected) iframe.contentWindow.postMessage(data, '*');
    else buffer.push(data);
  };
</script></body></html>`;
}

let loaded: Promise<{ createInspector: CreateInspector; ws: WsModule }> | undefined;

/**
 * Loads @statelyai/inspect and the `ws` it depends on (resolved from it, so any install layout works); a
 * missing package is one CliError naming what to install. Loaded once per process.
 */
export function loadInspectorPackages(): Promise<{ createInspector: CreateInspector; ws: WsModule }> {
  loaded ??= loadPackages();
  loaded.catch(() => (loaded = undefined));
  return loaded;
}

async function loadPackages(): Promise<{ createInspector: CreateInspector; ws: WsModule }> {
  const inspect = await optionalPackage('@statelyai/inspect', 'inspect', () => import('@statelyai/inspect'));
  const require = createRequire(createRequire(import.meta.url).resolve('@statelyai/inspect'));
  // Typed, not cast: a Stately inspector must be an InspectionSink for the mirror to drive it.
  const create: CreateInspector = (adapter) => inspect.createInspector(adapter);
  return { createInspector: create, ws: require('ws') as WsModule };
}

/**
 * Only the relay's own page and local programs may connect: a browser sends any page's origin with a
 * WebSocket handshake, and without this check any website could read the store's history from here.
 */
function trustedOrigin(port: number): (info: { origin?: string; req: IncomingMessage }) => boolean {
  const own = new Set([`http://${RELAY_HOST}:${port}`, `http://localhost:${port}`]);
  return ({ origin }) => origin === undefined || own.has(origin);
}

function listen(server: Server, port: number): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'EADDRINUSE'
          ? new CliError(`inspector relay: port ${port} on ${RELAY_HOST} is in use; pick another with --port`)
          : error,
      ),
    );
    server.listen(port, RELAY_HOST, () => resolve(server.address() as AddressInfo));
  });
}

/** Waits until `done()` holds or the deadline passes; the relay's close must not hang on a slow viewer. */
async function until(done: () => boolean, deadline: number): Promise<void> {
  while (!done() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
}

/**
 * Serves the Stately inspector for a store on loopback (127.0.0.1 only): an HTTP page embedding the inspector
 * UI, and a WebSocket on which each viewer gets its own replay of the committed changefeed from the start,
 * then every new commit live — so a browser opened late still sees each entity once, from its first state.
 * Messages viewers send are ignored: the store is the only source.
 *
 * @example
 * ```ts
 * const relay = await startInspectorRelay(engine.services.store, { port: 8787 });
 * console.log(relay.url); // http://127.0.0.1:8787
 * await relay.close();
 * ```
 */
export async function startInspectorRelay(
  store: Store,
  options: { port: number; pollMs?: number; onError?: (error: Error) => void },
): Promise<InspectorRelay> {
  const { createInspector, ws } = await loadInspectorPackages();
  const http = createServer((req, res) => {
    const host = req.headers.host ?? '';
    // A page reached through another host name (DNS rebinding) gets nothing.
    if (!/^(127\.0\.0\.1|localhost):\d+$/.test(host)) {
      res.writeHead(421, { 'content-type': 'text/plain' }).end('misdirected request\n');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(bridgePage(address.port));
  });
  const address = await listen(http, options.port);
  const sockets = new Viewers(ws, store, createInspector, options);
  const wss = new ws.WebSocketServer({ server: http, verifyClient: trustedOrigin(address.port) });
  wss.on('connection', (socket) => sockets.add(socket));
  return {
    url: `http://${RELAY_HOST}:${address.port}`,
    address,
    viewers: () => sockets.size(),
    caughtUp: () => sockets.caughtUp(),
    close: async () => {
      await sockets.closeAll();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/** The connected viewers, each with its own changefeed follower. */
class Viewers {
  private readonly viewers = new Map<RelaySocket, InspectionFeed>();

  constructor(
    private readonly ws: WsModule,
    private readonly store: Store,
    private readonly createInspector: CreateInspector,
    private readonly options: { pollMs?: number; onError?: (error: Error) => void },
  ) {}

  add(socket: RelaySocket): void {
    const send = (event: unknown) => {
      if (socket.readyState === this.ws.WebSocket.OPEN) socket.send(JSON.stringify(event));
    };
    const feed = new InspectionFeed(this.store, this.createInspector({ send }), {
      ...(this.options.pollMs === undefined ? {} : { pollMs: this.options.pollMs }),
      ...(this.options.onError === undefined ? {} : { onError: this.options.onError }),
    });
    this.viewers.set(socket, feed);
    const drop = () => {
      if (this.viewers.delete(socket)) void feed.stop();
    };
    socket.on('close', drop);
    socket.on('error', drop);
    feed.start();
  }

  size(): number {
    return this.viewers.size;
  }

  async caughtUp(): Promise<void> {
    await Promise.all([...this.viewers.values()].map((feed) => feed.caughtUp()));
  }

  /** Lets every viewer receive what was committed (bounded), then drops them: nothing is left reconnecting. */
  async closeAll(): Promise<void> {
    const deadline = Date.now() + DRAIN_MS;
    let timer: NodeJS.Timeout | undefined;
    const expiry = new Promise<void>((resolve) => (timer = setTimeout(resolve, DRAIN_MS)));
    await Promise.race([this.caughtUp(), expiry]);
    clearTimeout(timer);
    const sockets = [...this.viewers.keys()];
    await until(() => sockets.every((s) => s.bufferedAmount === 0), deadline);
    await Promise.all([...this.viewers.values()].map((feed) => feed.stop()));
    this.viewers.clear();
    for (const socket of sockets) socket.terminate();
  }
}

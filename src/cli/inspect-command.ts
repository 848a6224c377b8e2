import { createInterface } from 'node:readline';
import { join } from 'node:path';
import type { Engine } from '../engine/engine.js';
import { CliError } from './context.js';
import { runDemo } from './demo.js';
import { loadInspectorPackages, startInspectorRelay, type InspectorRelay } from './inspector-relay.js';

export type { InspectorRelay } from './inspector-relay.js';

export interface AttachInspectorOptions {
  /** The relay's port on 127.0.0.1 (0: any free port; the URL names the one bound). */
  port: number;
  /** How often each viewer's follower rereads the feed when no commit woke it (default 1000 ms). */
  pollMs?: number;
  /** Receives a viewer's failed feed read; the relay keeps serving. */
  onError?: (error: Error) => void;
}

/**
 * Serves the Stately inspector for a running engine's store on loopback: open `url` in a browser (its page
 * embeds stately.ai/inspect, so the browser needs internet). Every viewer gets the store's committed history
 * replayed in commit order, then each commit live — the daemon's passes, operator commands it serves and
 * other processes' commands alike. `close()` lets viewers receive what was committed, then drops them.
 * @statelyai/inspect is an optional peer dependency, loaded here only.
 *
 * @example
 * ```ts
 * const { attachInspector } = await import('./inspect-command.js');
 * const inspector = await attachInspector(engine, { port: 8787 });
 * console.log(`Stately inspector: ${inspector.url}`);
 * // … on shutdown, before the store closes:
 * await inspector.close();
 * ```
 */
export async function attachInspector(engine: Engine, options: AttachInspectorOptions): Promise<InspectorRelay> {
  const { port } = options;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new CliError(`--port: ${String(port)} is not a port number (0 to 65535)`);
  return startInspectorRelay(engine.services.store, {
    port,
    ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }),
    ...(options.onError === undefined ? {} : { onError: options.onError }),
  });
}

async function pressEnter(): Promise<void> {
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  await new Promise<void>((resolve) => rl.question('Press Enter when the inspector page is open… ', () => resolve()));
  rl.close();
}

/**
 * Runs the demo with the Stately inspector attached to its engine. Viewers that connect while it runs see the
 * whole history replayed and then each commit; the relay closes (after delivering) when the demo ends.
 */
export async function runInspect(port: number, wait: boolean): Promise<number> {
  // A missing optional package is reported before the demo touches its store.
  await loadInspectorPackages();
  const { receipts, verified } = await runDemo(
    join('.coven', 'inspect-demo.json'),
    (...lines) => console.log(lines.join('\n')),
    {
      attach: async (engine) => {
        const relay = await attachInspector(engine, { port });
        console.log(`Stately inspector relay on ${relay.url} — open it in a browser to watch the demo's actors.`);
        if (wait && process.stdin.isTTY) await pressEnter();
        return () => relay.close();
      },
    },
  );
  return receipts === verified ? 0 : 1;
}

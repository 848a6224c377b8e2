import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { runDemo } from './demo.js';
import { optionalPackage } from './optional-package.js';

/**
 * Runs the demo with the Stately inspector: a relay on loopback (its page embeds stately.ai/inspect, so the
 * browser needs internet) and a WebSocket inspector fed by the engine's inspection mirror. Opt-in only: the
 * websocket client reconnects forever when nobody listens, so this command always ends the process itself.
 * @statelyai/inspect is an optional peer dependency, loaded here only.
 */
export async function runInspect(port: number, wait: boolean): Promise<number> {
  const [{ createWebSocketInspector }, { createInspectorServer }] = await optionalPackage(
    '@statelyai/inspect',
    'inspect',
    () => Promise.all([import('@statelyai/inspect'), import('@statelyai/inspect/server')]),
  );
  const server = createInspectorServer({ port, autoOpen: false });
  const inspector = createWebSocketInspector({ url: `ws://127.0.0.1:${port}` });
  console.log(`Stately inspector relay on http://127.0.0.1:${port} — open it in a browser to watch the demo's actors.`);
  if (wait && process.stdin.isTTY) {
    const rl = createInterface({ input: process.stdin, output: process.stdout });
    await new Promise<void>((resolve) => rl.question('Press Enter when the inspector page is open… ', () => resolve()));
    rl.close();
  }
  let code: number;
  try {
    const { receipts, verified } = await runDemo(
      join('.coven', 'inspect-demo.json'),
      (...lines) => console.log(lines.join('\n')),
      { inspect: (event) => inspector.inspect.next?.(event) },
    );
    code = receipts === verified ? 0 : 1;
  } finally {
    inspector.stop();
    server.stop();
  }
  // The websocket client keeps a reconnect timer alive; nothing else is pending, so end here.
  process.exit(code);
}

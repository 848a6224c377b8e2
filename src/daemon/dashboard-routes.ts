import { existsSync } from 'node:fs';
import { join } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyReply } from 'fastify';
import { packageRoot } from '../contract/package-root.js';
import type { DaemonPlugin } from './index.js';
import { registerConsoleRoutes } from './console-routes.js';

/** Where `npm run build:dashboard` writes the built page, relative to the package root. */
export const DASHBOARD_DIR = join('dist', 'dashboard');

/**
 * The page may load only what the daemon itself serves: no CDN, no inline script, no framing. The token
 * arrives in the page's address, so no request may carry it on as a referrer.
 */
const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
};

/** The answer of `/` and `/assets/*` when the page was never built. */
export function missingBuildSentence(root: string): string {
  return (
    `The dashboard is not built: ${join(root, 'index.html')} is missing. ` +
    'Run `npm run build:dashboard` in the coven-automata folder, then reload this page.\n'
  );
}

function answerMissing(reply: FastifyReply, root: string): FastifyReply {
  return reply
    .code(503)
    .header('content-type', 'text/plain; charset=utf-8')
    .header('cache-control', 'no-store')
    .send(missingBuildSentence(root));
}

/**
 * The dashboard plugin: serves the built page (`dist/dashboard`, found from the package root) at `/` and its
 * hashed assets under `/assets/`. GET routes, so loopback TCP reads them without the token; the page then
 * sends the token it was opened with on its own requests. Without a build, `/` and `/assets/*` answer 503
 * with a sentence saying how to build it. The files present when the daemon starts are the ones served.
 *
 * @example
 * ```ts
 * const daemon = await startDaemon({ engine, store, storeFile, listen, plugins: [dashboardRoutes()] });
 * console.log(`${daemon.url}/?token=${daemon.token}`);
 * ```
 */
export function dashboardRoutes(options: { root?: string } = {}): DaemonPlugin {
  return async (app, ctx) => {
    // The console's own reads (schedule preview, machine counts) come with the page that uses them.
    registerConsoleRoutes(app, ctx);
    const root = options.root ?? join(packageRoot(), DASHBOARD_DIR);
    if (!existsSync(join(root, 'index.html'))) {
      app.get('/', async (_request, reply) => answerMissing(reply, root));
      app.get('/assets/*', async (_request, reply) => answerMissing(reply, root));
      return;
    }
    await app.register(fastifyStatic, {
      root,
      prefix: '/',
      wildcard: false,
      index: 'index.html',
      decorateReply: false,
      dotfiles: 'deny',
      // Our own cache-control below: send's default would give the page a max-age.
      cacheControl: false,
      setHeaders(response, path) {
        for (const [name, value] of Object.entries(SECURITY_HEADERS)) response.setHeader(name, value);
        // Asset names carry their content hash; the page itself must be re-read to pick up a new build.
        response.setHeader(
          'cache-control',
          path.endsWith('index.html') ? 'no-cache' : 'public, max-age=31536000, immutable',
        );
      },
    });
  };
}

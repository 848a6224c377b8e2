import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DEFINITION_STATES, OCCURRENCE_STATES, RUN_STATES } from '../../machines/index.js';
import { hiddenAutomations } from '../domain/read-acl.js';
import type { StoreReader } from '../store/store.js';
import type { DaemonContext } from './context.js';
import { parseFilter, parsePage } from './console-query.js';
import { HELD, searchDefinitions, searchOccurrences, searchRuns } from './console-reads.js';
import { pageHealth } from './console-health.js';
import { consoleCounts, parseBuckets, runsOverTime } from './console-stats.js';
import { callerOf, isTrusted } from './trust.js';
import { feedTail, parseRecent } from './feed-tail.js';

const OCCURRENCE_STATE_SET: ReadonlySet<string> = new Set(OCCURRENCE_STATES);
const RUN_STATE_SET: ReadonlySet<string> = new Set([...RUN_STATES, HELD]);
const DEFINITION_STATE_SET: ReadonlySet<string> = new Set(DEFINITION_STATES);
const NO_STATES: ReadonlySet<string> = new Set();

type Query = Record<string, unknown>;

/** Whether a request carried a token at all (right or wrong): the page must tell a refused token from none. */
function presentsToken(request: FastifyRequest): boolean {
  const query = request.query as Query | undefined;
  return typeof request.headers.authorization === 'string' || typeof query?.token === 'string';
}

/** One console read: its query checked first (a bad one writes and reads nothing), then one store snapshot. */
function consoleRead(
  ctx: DaemonContext,
  read: (reader: StoreReader, query: Query, hidden: ReadonlySet<string>) => Promise<unknown>,
) {
  return async (request: FastifyRequest) => {
    const query = (request.query ?? {}) as Query;
    const caller = callerOf(request, ctx);
    return ctx.store.read(async (reader) => read(reader, query, await hiddenAutomations(reader, caller)));
  };
}

/**
 * The console's bounded reads, for the dashboard's search, failures and charts (GET, so open to loopback TCP
 * without the token, redacted as every tokenless read; automations the read ACL hides from the caller are left
 * out). Every list answers one page of at most 100 rows with a cursor, however large the store:
 *
 * - `GET /api/v1/console/session`: whether this request's token is accepted (`authority`: operator or read-only).
 * - `GET /api/v1/console/feed-tail?recent=50`: the feed position the last `recent` entries follow (`after`).
 * - `GET /api/v1/console/occurrences`, `/runs`, `/definitions`: `q`, `automation`, `state` (comma-separated;
 *   runs also `held`), `tag`, `from`, `to` (ISO instants: the slot, or the run's start), `limit`, `cursor`.
 * - `GET /api/v1/console/counts`: occurrences, runs and definitions per state (same filters, no `state`).
 * - `GET /api/v1/console/runs-over-time`: runs started per time bucket, by state (`from`, `to`, `buckets` ≤ 200).
 *
 * A bad parameter is a VALIDATION_FAILED envelope (400) naming it.
 *
 * @example
 * ```ts
 * const daemon = await startDaemon({ engine, store, storeFile }); // the console reads are core routes
 * // GET /api/v1/console/runs?state=failed,held&limit=20
 * ```
 */
export function registerConsoleReads(app: FastifyInstance, ctx: DaemonContext): void {
  const trust = { config: { trust: 'read' } };
  app.get('/api/v1/console/session', trust, async (request) => {
    const trusted = isTrusted(request, ctx);
    return { authority: trusted ? 'operator' : 'read-only', tokenPresented: presentsToken(request) };
  });
  app.get('/api/v1/console/feed-tail', trust, async (request) => {
    const recent = parseRecent((request.query ?? {}) as Query);
    return ctx.store.read((reader) => feedTail(reader, recent));
  });
  app.get(
    '/api/v1/console/occurrences',
    trust,
    consoleRead(ctx, (reader, query, hidden) =>
      searchOccurrences(reader, parseFilter(query, OCCURRENCE_STATE_SET), parsePage(query), hidden),
    ),
  );
  app.get(
    '/api/v1/console/runs',
    trust,
    consoleRead(ctx, (reader, query, hidden) =>
      searchRuns(reader, parseFilter(query, RUN_STATE_SET), parsePage(query), hidden),
    ),
  );
  app.get(
    '/api/v1/console/definitions',
    trust,
    consoleRead(ctx, async (reader, query, hidden) => {
      const found = await searchDefinitions(reader, parseFilter(query, DEFINITION_STATE_SET), parsePage(query), hidden);
      return { ...found, definitions: await pageHealth(ctx.engine.services, reader, found.definitions) };
    }),
  );
  app.get(
    '/api/v1/console/counts',
    trust,
    consoleRead(ctx, (reader, query, hidden) => consoleCounts(reader, parseFilter(query, NO_STATES), hidden)),
  );
  app.get(
    '/api/v1/console/runs-over-time',
    trust,
    consoleRead(ctx, (reader, query, hidden) =>
      runsOverTime(reader, parseFilter(query, NO_STATES), parseBuckets(query), ctx.engine.services.clock.now(), hidden),
    ),
  );
}

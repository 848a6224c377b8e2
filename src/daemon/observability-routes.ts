import type { RetentionOptions } from '../retention/policy.js';
import type { EngineMetrics } from '../observability/metrics.js';
import { runDoctor, type SubscriberCursor } from '../observability/run-doctor.js';
import type { DoctorReport } from '../observability/doctor.js';
import type { DaemonContext, DaemonPlugin } from './context.js';
import { OPERATOR_CALLER, type ReadCaller } from '../domain/read-acl.js';
import { callerOf } from './trust.js';

export interface ObservabilityRoutesOptions {
  /** The engine's metrics; the daemon's onPass must reach `metrics.observePass` (the doctor's pass facts). */
  metrics: EngineMetrics;
  /** The engine's retention (false: off), so the doctor judges retention pressure against the right windows. */
  retention?: RetentionOptions | false;
  /**
   * Subscribers the embedder serves beside the daemon's own stream, for events.cursor-lag. The daemon's
   * `GET /api/v1/events` subscribers are always reported.
   */
  subscribers?: () => SubscriberCursor[];
}

/** The doctor as the daemon sees it: its own engine leads unless a newer generation replaced it; its passes. */
export async function daemonDoctor(
  ctx: DaemonContext,
  options: ObservabilityRoutesOptions,
  caller: ReadCaller = OPERATOR_CALLER,
): Promise<DoctorReport> {
  const { lastPassAt, lastSuccessfulPassAt, lastPassDurationMs } = options.metrics.passes();
  const { isLeader, leaderId, replacedByGeneration } = await ctx.engine.leadership();
  return runDoctor(ctx.engine, {
    leader: { isLeader, leaderId, ...(replacedByGeneration === undefined ? {} : { replacedByGeneration }) },
    lastPassAt,
    lastSuccessfulPassAt,
    lastPassDurationMs,
    startedAt: ctx.startedAt.toISOString(),
    ...(options.retention === undefined ? {} : { retention: options.retention }),
    subscribers: [...ctx.subscribers.list(), ...(options.subscribers?.() ?? [])],
    caller,
  });
}

/**
 * `GET /metrics` (Prometheus text format) and `GET /api/v1/doctor` (a diagnostics.doctor.v1 report, 200 whatever
 * it finds: an unhealthy store is an answer, not a failed request). Both are on upstream's read list, so loopback
 * TCP serves them without the token; the doctor then leaves out the automations the read ACL restricts.
 *
 * @example
 * ```ts
 * const metrics = createEngineMetrics({ engine });
 * engine.start((report) => metrics.observePass(report));
 * await startDaemon({ engine, store, storeFile: store.file, plugins: [observabilityRoutes({ metrics })] });
 * ```
 */
export function observabilityRoutes(options: ObservabilityRoutesOptions): DaemonPlugin {
  return async (app, ctx) => {
    app.get('/metrics', { config: { trust: 'read' } }, async (_request, reply) =>
      reply.type(options.metrics.contentType).send(await options.metrics.text()),
    );
    app.get('/api/v1/doctor', { config: { trust: 'read' } }, async (request) =>
      daemonDoctor(ctx, options, callerOf(request, ctx)),
    );
  };
}

import type { ProducerIdentity } from '../changefeed/event-envelope.js';
import type { Clock } from '../clock/clock.js';
import type { RequirementsCheck } from '../command-handler/context.js';
import type { CommitTracing, InspectionSink } from '../domain/inspection.js';
import { DEFAULT_LEASE_SECONDS } from '../domain/services.js';
import type { RetentionOptions } from '../retention/policy.js';
import type { OutputDelivery } from '../runtime/output-delivery.js';
import type { Runtime } from '../runtime/runtime.js';
import type { Store } from '../store/store.js';
import type { EngineTimers } from './timers.js';

/** What {@link createEngine} takes: the store, the runtimes, and the engine's optional settings. */
export interface EngineOptions {
  store: Store;
  /** Runtimes by the `runtimeRequirements.runtimeId` definitions name. */
  runtimes: Runtime[];
  clock?: Clock;
  /** Names this engine in claims (`claimedBy`) and event producers; unique per process. */
  instanceId?: string;
  /**
   * A claim's lease (default `DEFAULT_LEASE_SECONDS`, domain/services.ts). The engine renews its own owner
   * lease while it runs, so this bounds how long a dead engine's undecided launches wait before recovery, not
   * how long a live one may take.
   */
  leaseSeconds?: number;
  /**
   * The host this engine's owner lease names (default `os.hostname()`). Engines whose leases name the same host
   * judge each other's liveness by process id at once; across hosts, a dead engine's work waits out its lease.
   * Set it where host names repeat across machines or process ids are not comparable (containers sharing a name).
   */
  host?: string;
  /** The lease in minutes, as upstream configures it; `leaseSeconds` wins when both are given. */
  leaseMinutes?: number;
  /**
   * Definitions, occurrences or attempts a pass phase handles at once (default 64). Each still commits in its
   * own transaction; concurrency lets the store share one durable write among them. 1 keeps strict order.
   */
  passConcurrency?: number;
  /**
   * Due definitions the planning phase plans at once (default 256; `passConcurrency` when only that is
   * given, so 1 still keeps strict order). Each plan is still its own transaction.
   */
  planConcurrency?: number;
  producer?: ProducerIdentity;
  newId?: () => string;
  requirements?: RequirementsCheck;
  /**
   * A Stately inspector (`createInspector(adapter)` from @statelyai/inspect, or any {@link InspectionSink}):
   * fed from the committed changefeed, in commit order, from the engine's construction until {@link Engine.stop}.
   * Every definition, occurrence, run and attempt appears once, from its first state, then every transition.
   */
  inspector?: InspectionSink;
  /**
   * Traces of each occurrence's plan, claim, dispatch, run and settle, from the transitions this engine commits:
   * `openTelemetryTracing()` from `coven-automata/otel` (needs `@opentelemetry/api`). Without it nothing is traced
   * and nothing of OpenTelemetry is loaded.
   */
  tracing?: CommitTracing;
  /**
   * Retention of settled history by the contract's classes (default: ephemeral 1 day, standard 30, extended
   * 365, legal_hold forever). Each compacted occurrence and run keeps one `feed.snapshot` event with its final
   * state; its records and earlier events leave the store. `false` keeps all history.
   */
  retention?: RetentionOptions | false;
  /** The timers {@link Engine.start} schedules passes with (default: the host's); see {@link EngineTimers}. */
  timers?: EngineTimers;
  /**
   * Where runs of definitions with an atomic outputTarget deliver their session's output (for instance an
   * `AtomicFileDelivery` rooted at a folder). Without one, such runs settle failed: their output cannot commit.
   */
  delivery?: OutputDelivery;
}

/** A claim's lease in milliseconds, as the options give it (seconds first, then minutes, else the default). */
export function leaseMsOf(options: Pick<EngineOptions, 'leaseSeconds' | 'leaseMinutes'>): number {
  if (options.leaseSeconds !== undefined) return options.leaseSeconds * 1000;
  return options.leaseMinutes !== undefined ? options.leaseMinutes * 60_000 : DEFAULT_LEASE_SECONDS * 1000;
}

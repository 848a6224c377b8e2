import type { Engine } from '../engine/engine.js';
import type { RetentionOptions } from '../retention/policy.js';
import type { StoreReader } from '../store/store.js';
import { diagnose, type DoctorReport, type SchedulerFacts } from './doctor.js';
import { readDoctorView, withoutAutomations } from './doctor-view.js';
import { hiddenAutomations, type ReadCaller } from '../domain/read-acl.js';

/** A live changefeed subscriber: the last global position it was sent (-1: none yet). */
export interface SubscriberCursor {
  subscriberId: string;
  position: number;
  /** A subscriber of one stream (`automation/nightly`): its lag counts that stream's entries only. */
  stream?: string;
  /** With `stream`: the last sequence of that stream it was sent (-1: none yet). */
  sequence?: number;
}

export interface DoctorOptions extends Omit<SchedulerFacts, 'subscribers'> {
  /** The instant judged (default: the engine's clock). */
  now?: Date;
  /** The engine's retention (false: off); judged against its windows. Default: the engine defaults. */
  retention?: RetentionOptions | false;
  subscribers?: SubscriberCursor[];
  /**
   * Who asks (default: the operator, who reads everything). The report leaves out every automation the read ACL
   * hides from this caller.
   */
  caller?: ReadCaller;
}

/** Counting further than this says nothing more: the threshold is a handful of events. */
const LAG_PROBE = 1000;

async function behind(reader: StoreReader, cursors: SubscriberCursor[]): Promise<SchedulerFacts['subscribers']> {
  const lags = [];
  for (const c of cursors) {
    const pending =
      c.stream === undefined
        ? await reader.readFeed({ after: c.position, limit: LAG_PROBE })
        : await reader.readLog(c.stream, { after: c.sequence ?? -1, limit: LAG_PROBE });
    lags.push({ ...c, behind: pending.length });
  }
  return lags;
}

/**
 * Reads the engine's store once and judges it: the report `GET /api/v1/doctor` and `coven-automata doctor`
 * print. Reads only; a report is never a reason to write.
 *
 * @example
 * ```ts
 * const report = await runDoctor(engine, { leader: { isLeader: true, leaderId: 'engine-1' } });
 * console.log(report.ok, report.findings.map((f) => f.code));
 * ```
 */
export async function runDoctor(engine: Engine, options: DoctorOptions = {}): Promise<DoctorReport> {
  const now = options.now ?? engine.services.clock.now();
  const { now: _now, retention, subscribers, caller, ...facts } = options;
  return engine.services.store.read(async (reader) => {
    const whole = await readDoctorView(engine, reader, { now, ...(retention === undefined ? {} : { retention }) });
    const view = caller === undefined ? whole : withoutAutomations(whole, await hiddenAutomations(reader, caller));
    const lags = subscribers === undefined ? undefined : await behind(reader, subscribers);
    return diagnose(view, now, { ...facts, ...(lags === undefined ? {} : { subscribers: lags }) });
  });
}

// coven-automata through its public entry (the repository's src/index.ts, run by tsx): an engine running as a
// daemon does (Engine.start on the real clock) over one durable store: SQLite (synchronous=FULL, the store's
// default), JSON (fsync per commit) or PostgreSQL, or for comparison the memory store (nothing durable). A job
// is a run-now request of a definition of its own (overlap is forbidden, so a burst of n needs n definitions);
// a run-now answers once its launch was acknowledged, so `concurrency` requests in flight bound the launches in
// flight as a peer's worker slots do.
// Completion is the occurrence's `succeeded` commit, which the engine makes as soon as the runtime cues the
// session's exit (Runtime.onSessionExit); without cues (`coven-sqlite-polled`), at its next pass after observing
// the session (passes run within 100 ms of an outside commit, and every second while sessions run).
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Engine, Store } from '../../../../src/index.js';
import { definition, pooled } from '../../../fixtures.js';
import { ImmediateRuntime } from './coven-runtime.js';
import type { HeldJobs, JobHooks, SystemUnderTest, WorkerSettings } from './system.js';

/** `memory`: nothing durable (the engine's own work alone), for comparison, never for the crash workload. */
export type CovenStoreKind = 'sqlite' | 'json' | 'postgres' | 'memory';
type EngineModule = Pick<typeof import('../../../../src/index.js'), 'createEngine' | 'openStore' | 'MemoryStore'>;

/**
 * The engine's public entry: this repository's, or a baseline checkout's (`--baseline`), so the same harness runs
 * both sides of a comparison.
 */
async function engineModule(root: string | undefined): Promise<EngineModule> {
  if (root === undefined) return import('../../../../src/index.js');
  return (await import(pathToFileURL(join(root, 'src', 'index.ts')).href)) as EngineModule;
}
/** Definitions set up at once (each its own three commands). */
const SETUP_IN_FLIGHT = 32;

interface Response {
  outcome: 'committed' | 'replayed' | 'rejected';
  result?: Record<string, unknown>;
  error?: { code: string; message: string };
}

export class CovenSystem implements SystemUnderTest {
  private store: Store | undefined;
  private engine: Engine | undefined;
  private readonly runtime: ImmediateRuntime;
  private slots = 0;

  constructor(
    private readonly kind: CovenStoreKind,
    private readonly dir: string,
    private readonly concurrency: number,
    private readonly pgUrl: string | undefined,
    cuesExits = true,
    private readonly root?: string,
  ) {
    this.runtime = new ImmediateRuntime(cuesExits);
  }

  private send(command: string, payload: Record<string, unknown>, key: string, expected?: number): Promise<Response> {
    return this.engine!.commands.handle({
      schemaVersion: 'coven.automations.v1',
      command,
      adoptionKey: key,
      ...(expected === undefined ? {} : { expectedRevision: expected }),
      origin: { principal: { principalId: 'principal:bench' }, channel: 'cli' },
      intent: { statement: 'peer bench' },
      payload,
    }) as Promise<Response>;
  }

  private async must(command: string, payload: Record<string, unknown>, key: string, expected?: number) {
    const response = await this.send(command, payload, key, expected);
    if (response.outcome === 'rejected')
      throw new Error(`${command}: ${response.error!.code} ${response.error!.message}`);
  }

  async prepare(slots: number, fresh: boolean): Promise<void> {
    this.slots = slots;
    const { createEngine, openStore, MemoryStore } = await engineModule(this.root);
    this.store =
      this.kind === 'memory'
        ? new MemoryStore()
        : this.kind === 'postgres'
          ? await openStore(this.pgUrl as `postgres://${string}`)
          : await openStore(join(this.dir, `store.${this.kind}`), this.kind);
    this.engine = createEngine({
      store: this.store,
      runtimes: [this.runtime],
      instanceId: `peers-${process.pid}`,
      passConcurrency: this.concurrency,
    });
    if (!fresh) return;
    // Due once a day, twelve hours from now: the scheduler plans nothing while the bench runs.
    const rrule = `FREQ=DAILY;BYHOUR=${(new Date().getUTCHours() + 12) % 24}`;
    await pooled(
      Array.from({ length: slots }, (_, i) => `peers-${String(i).padStart(5, '0')}`),
      SETUP_IN_FLIGHT,
      async (id) => {
        await this.must('definition.create.v1', { definition: definition(id, 1, 'draft', rrule) }, `${id}-c`);
        await this.must('definition.revise.v1', { definition: definition(id, 2, 'paused', rrule) }, `${id}-r`, 1);
        await this.must('definition.activate.v1', { automationId: id }, `${id}-a`, 2);
      },
    );
  }

  async startWorkers(hooks: JobHooks, settings: WorkerSettings): Promise<void> {
    this.runtime.hooks = hooks;
    this.runtime.executionLog = settings.executionLog;
    this.engine!.services.observer = (transitions) => {
      for (const t of transitions) if (t.entity === 'occurrence' && t.to === 'succeeded') hooks.completed(t.id);
    };
    this.engine!.start();
  }

  /** The last refusal's code and message, for the error a refused burst raises. */
  private refusal = '';

  private async runNow(id: number): Promise<string | undefined> {
    const automationId = `peers-${String(id % this.slots).padStart(5, '0')}`;
    const response = await this.send('occurrence.runNow.v1', { automationId }, `peers-run-${id}`);
    if (response.outcome !== 'rejected') return response.result!.occurrenceId as string;
    this.refusal = `${response.error!.code}: ${response.error!.message}`;
    return undefined;
  }

  async submitBurst(ids: number[]): Promise<string[]> {
    const keys = await pooled(ids, this.concurrency, (id) => this.runNow(id));
    const refused = keys.filter((k) => k === undefined).length;
    if (refused > 0) throw new Error(`${refused} run-now requests of the burst were refused (${this.refusal})`);
    return keys as string[];
  }

  submitOne(id: number): Promise<string | undefined> {
    return this.runNow(id);
  }

  async held(): Promise<HeldJobs> {
    let accepted = 0;
    let completed = 0;
    let cursor: string | undefined;
    do {
      const page = await this.send(
        'occurrence.list.v1',
        { view: 'all', limit: 100, ...(cursor === undefined ? {} : { cursor }) },
        `list-${Date.now()}-${accepted}`,
      );
      const result = page.result as { occurrences: Array<{ state: string }>; cursor: { next?: string } };
      accepted += result.occurrences.length;
      completed += result.occurrences.filter((o) => o.state === 'succeeded').length;
      cursor = result.cursor.next;
    } while (cursor !== undefined);
    return { accepted, completed };
  }

  async stop(): Promise<void> {
    await this.engine?.stop();
    await this.store?.close();
  }
}

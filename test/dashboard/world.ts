import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SimulatedClock } from '../../src/clock/clock.js';
import { packageRoot } from '../../src/contract/package-root.js';
import { createEngine, type Engine } from '../../src/engine/engine.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { openStore, type FileStore } from '../../src/store/open-store.js';
import { startDaemon, type Daemon } from '../../src/daemon/index.js';
import { dashboardRoutes, DASHBOARD_DIR } from '../../src/daemon/dashboard-routes.js';
import { command, definitionBody } from '../support/commands.js';
import type { AutomationDefinition } from '../../src/domain/definition-body.js';
import type { ScheduleExtension } from '../../src/schedule/schedule-extension.js';
import { scheduledBy } from '../support/engine-harness.js';

/** The newest modification time of the files under a folder (recursively). */
function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * Builds the page when dist/dashboard is missing or older than its sources, so the browser test never runs
 * against a stale page (a fresh clone's `npm ci` has already built it through `prepare`).
 */
export function ensureDashboardBuilt(): string {
  const root = packageRoot();
  const built = join(root, DASHBOARD_DIR, 'index.html');
  // The page bundles its own folder, the two files it may import from outside it, and the machines it draws.
  const sources = Math.max(
    newestMtime(join(root, 'src', 'dashboard')),
    statSync(join(root, 'spec', 'coven-automations', 'v1', 'state-machines.json')).mtimeMs,
    ...['definition', 'occurrence', 'run', 'attempt'].map((m) => statSync(join(root, 'docs', `${m}.svg`)).mtimeMs),
    statSync(join(root, 'machines', 'states.ts')).mtimeMs,
    statSync(join(root, 'src', 'domain', 'lifecycle-done.ts')).mtimeMs,
  );
  if (!existsSync(built) || statSync(built).mtimeMs < sources)
    execFileSync('npm', ['run', '--silent', 'build:dashboard'], { cwd: root, stdio: 'inherit' });
  return join(root, DASHBOARD_DIR);
}

export interface DashboardWorld {
  dir: string;
  clock: SimulatedClock;
  runtime: SimulatedRuntime;
  engine: Engine;
  store: FileStore;
  daemon: Daemon;
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** Moves the simulated clock on and runs one engine pass, as the running engine would. */
  pass(minutes: number): Promise<void>;
  close(): Promise<void>;
}

async function ok(engine: Engine, envelope: unknown): Promise<void> {
  const response = await engine.commands.handle(envelope);
  if (response.outcome === 'rejected') throw new Error(JSON.stringify(response.error));
}

/**
 * A daemon in this process on a temp JSON store, serving the dashboard over loopback TCP, with one active
 * automation `daily-notes` (daily at 09:00 UTC) on a simulated runtime and clock. The engine is not started:
 * the test runs each pass itself (`pass`), so what the page shows follows from the steps the test takes.
 */
export async function dashboardWorld(plugins = [dashboardRoutes()], other?: Runtime): Promise<DashboardWorld> {
  const dir = mkdtempSync(join(tmpdir(), 'coven-dash-'));
  const storeFile = join(dir, 'automations.json');
  const store = await openStore(storeFile);
  const clock = new SimulatedClock('2026-03-02T08:00:00.000Z');
  const runtime = new SimulatedRuntime({ durationMs: 60_000 });
  // `other` (runtime id coven-code, as the definition names) runs the sessions instead of the simulated runtime.
  const engine = createEngine({ store, clock, runtimes: [other ?? runtime], instanceId: 'engine-dashboard' });
  const body = (revision: number, lifecycleState: 'draft' | 'paused') =>
    definitionBody('daily-notes', { revision, lifecycleState });
  await ok(engine, command('definition.create.v1', { definition: body(1, 'draft') }));
  await ok(engine, command('definition.revise.v1', { definition: body(2, 'paused') }, { expectedRevision: 1 }));
  await ok(engine, command('definition.activate.v1', { automationId: 'daily-notes' }, { expectedRevision: 2 }));
  const daemon = await startDaemon({ engine, store, storeFile, listen: { host: '127.0.0.1', port: 0 }, plugins });
  return {
    dir,
    clock,
    runtime,
    engine,
    store,
    daemon,
    url: daemon.url!,
    async pass(minutes) {
      clock.advance({ minutes });
      await engine.tick();
    },
    async close() {
      await daemon.close();
      await engine.stop();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A definition as the console tests need it: its schedule, its zone and its tags. */
export interface DefinitionShape {
  rrule?: string;
  timezone?: string;
  tags?: string[];
  /** The run deadline (the body's policies.timeout.perRunMinutes; 30 unless set). */
  perRunMinutes?: number;
  /** An x-coven-automata.schedule.v1 body, scheduling it instead of `rrule`. */
  schedule?: ScheduleExtension;
  /** More definition extensions (x-coven-automata.limits.v1, say). */
  extensions?: Record<string, unknown>;
}

/** Creates and activates one automation through the engine's commands (draft → paused → active). */
export async function addActiveDefinition(engine: Engine, automationId: string, shape: DefinitionShape = {}) {
  const policies = (base: AutomationDefinition['policies']) =>
    shape.perRunMinutes === undefined ? base : { ...base, timeout: { perRunMinutes: shape.perRunMinutes } };
  const body = (revision: number, lifecycleState: 'draft' | 'paused') => {
    const options = {
      revision,
      lifecycleState,
      ...(shape.rrule === undefined ? {} : { rrule: shape.rrule }),
      ...(shape.timezone === undefined ? {} : { timezone: shape.timezone }),
    };
    const extra = {
      display: { name: `Automation ${automationId}`, tags: shape.tags ?? [] },
      policies: policies(definitionBody(automationId, options).policies),
      ...scheduledBy(shape.schedule, shape.extensions),
    };
    return definitionBody(automationId, { ...options, extra });
  };
  await ok(engine, command('definition.create.v1', { definition: body(1, 'draft') }));
  await ok(engine, command('definition.revise.v1', { definition: body(2, 'paused') }, { expectedRevision: 1 }));
  await ok(engine, command('definition.activate.v1', { automationId }, { expectedRevision: 2 }));
}

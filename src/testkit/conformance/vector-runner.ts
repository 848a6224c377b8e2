import { readFileSync } from 'node:fs';
import type { Engine } from '../../engine/engine.js';
import { judgeVector } from './vector-expectations.js';
import { overall, type ConformanceVector, type VectorReport } from './vector-format.js';
import { applyBindings } from './authority-ops.js';
import { applyOp } from './vector-ops.js';
import { PREREQUISITES } from './prerequisites.js';
import { envelope, reviseWith, VectorRun, type VectorSeams } from './vector-session.js';

type Definitions = NonNullable<ConformanceVector['input']['definitions']>;
type Failure = { automationId: string; code: string; message: string; problems?: string[] };

/** Imports definitions through legacy.import.v1; an import that imports nothing is refused whole. */
async function importDefinitions(engine: Engine, definitions: Array<Record<string, unknown>>): Promise<Failure[]> {
  if (definitions.length === 0) return [];
  const imported = await engine.commands.handle(
    envelope('legacy.import.v1', { source: 'flat-definitions', definitions }),
  );
  return ((imported.result ?? imported.error?.details)?.failures as Failure[] | undefined) ?? [];
}

/** Brings each imported definition to the vector's status through the contract's own transitions. */
async function reachStatuses(run: VectorRun, definitions: Definitions, refused: Set<string>): Promise<void> {
  const bound = new Map((run.vector.input.bindings ?? []).map((b) => [String(b.automationId), String(b.familiarId)]));
  for (const d of definitions) {
    if (d.status === 'DISABLED' || refused.has(d.id)) continue;
    // Imports land in draft; a paused definition must bind its familiar exactly, so flat vectors that name
    // none get the familiar their authority binding names, else a runner familiar.
    const revised = await reviseWith(
      run.engine.commands,
      d.id,
      (body) => {
        const binding = body.binding as { familiarId?: string };
        if (binding.familiarId !== undefined) return;
        binding.familiarId = bound.get(d.id) ?? 'conformance-familiar';
        if (!bound.has(d.id))
          run.notes.push(`${d.id} names no familiar: bound to "conformance-familiar" to leave draft`);
      },
      'paused',
    );
    if (revised.outcome !== 'committed') continue;
    if (d.status === 'ACTIVE')
      await run.engine.commands.handle(
        envelope('definition.activate.v1', { automationId: d.id }, { expectedRevision: revised.revision! }),
      );
  }
}

/** `local` is accepted only at compatibility entry points and resolved to the host's IANA zone before storage. */
function resolveLocal(run: VectorRun, definition: Definitions[number]) {
  if (definition.timezone !== 'local') return definition;
  const zone = run.vector.virtualTime?.hostTimezone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
  const resolved = zone === 'UTC' || zone === 'Etc/UTC' ? 'utc' : zone;
  run.notes.push(`timezone "local" of ${definition.id} resolved to ${resolved} at import (the host zone)`);
  return { ...definition, timezone: resolved };
}

/** Seeds the vector's authority bindings (coven.automations.authority.v1) through the engine's own commands. */
async function bind(run: VectorRun, bindings: Array<Record<string, unknown>>): Promise<void> {
  if (bindings.length === 0) return;
  const answers = await applyBindings({ engine: run.engine, clock: run.clock, notes: run.notes }, bindings);
  for (const a of answers)
    if (a.outcome === 'rejected') run.notes.push(`binding setup: ${a.command} refused: ${String(a.error?.message)}`);
}

/** The vector's prerequisites this engine provides (vector-expectations.ts counts the others as missing). */
const provided = (vector: ConformanceVector) =>
  (vector.prerequisites ?? []).flatMap((p) => (PREREQUISITES[p] === undefined ? [] : [PREREQUISITES[p]]));

/** A vector's world after its set-up (definitions imported and brought to their statuses, bindings, prerequisites). */
export async function setupVector(vector: ConformanceVector, seams: VectorSeams = {}): Promise<VectorRun> {
  const run = new VectorRun(vector, seams);
  const definitions = (vector.input.definitions ?? []).map((d) => resolveLocal(run, d));
  const invalid = vector.input.invalidDefinitions ?? [];
  const failures = await importDefinitions(run.engine, [...definitions, ...invalid]);
  const refused = new Set(failures.map((f) => f.automationId));
  for (const failure of failures) {
    const index = invalid.findIndex((d) => d.id === failure.automationId);
    // Upstream labels the refusal of invalidDefinitions[i] as def-i.
    if (index >= 0) run.importRefusals.set(`def-${index}`, failure);
    else run.importRefusals.set(failure.automationId, failure);
  }
  for (const [i, d] of invalid.entries())
    if (!refused.has(String(d.id))) run.notes.push(`invalidDefinitions[${i}] (${String(d.id)}) was imported`);
  run.definitionCount = definitions.length;
  await reachStatuses(run, definitions, refused);
  await bind(run, vector.input.bindings ?? []);
  for (const p of provided(vector)) await p.setup(run);
  run.setupEnd = (await run.store.read((r) => r.readFeed())).length;
  return run;
}

/** Runs one conformance.vector.v1 file against a fresh engine and compares every expectation it states. */
export async function runVector(file: string): Promise<VectorReport> {
  return runVectorDocument(JSON.parse(readFileSync(file, 'utf8')) as ConformanceVector, file);
}

/** Runs a vector already read (`file` names it in the report), on engines built through the test seams. */
export async function runVectorDocument(
  vector: ConformanceVector,
  file: string,
  seams: VectorSeams = {},
): Promise<VectorReport> {
  const run = await setupVector(vector, seams);
  try {
    await run.runOps((op) => applyOp(run, op));
    for (const p of provided(vector)) await p.probe(run);
    const results = await judgeVector(vector, run);
    return { file, vectorId: vector.vectorId, title: vector.title, status: overall(results), expectations: results };
  } finally {
    run.delivery.close();
  }
}

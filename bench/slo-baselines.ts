// The SLO bench's two in-run baselines: the XState ceiling (restore + transition() of the exact transitions the
// engine committed, in memory) and the fsync floor (write + fsync appends of the bytes the engine wrote per commit).
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { transition, type AnyStateMachine } from 'xstate';
import { attemptMachine, occurrenceMachine, runMachine } from '../machines/index.js';
import type { CommittedTransition } from '../src/domain/inspection.js';

const MACHINES: Record<CommittedTransition['entity'], AnyStateMachine> = {
  occurrence: occurrenceMachine as unknown as AnyStateMachine,
  run: runMachine as unknown as AnyStateMachine,
  attempt: attemptMachine as unknown as AnyStateMachine,
};

/** The in-memory ceiling: restore each committed transition's source state and take it again with transition(). */
export function xstateCeiling(committed: CommittedTransition[]): {
  perSecond: number;
  agreed: number;
  compared: number;
} {
  // Creations ('none' → initial) are actor starts, not transitions; the rest are replayed.
  // A committed transition carries its target context; the source context is the entity's previous one.
  const previous = new Map<string, Record<string, unknown>>();
  const transitions: CommittedTransition[] = [];
  for (const t of committed) {
    const key = `${t.entity}/${t.id}`;
    const before = previous.get(key);
    if (t.from !== 'none' && before !== undefined) transitions.push({ ...t, context: before });
    previous.set(key, t.context);
  }
  let agreed = 0;
  const rounds = 3;
  const start = performance.now();
  for (let round = 0; round < rounds; round++) {
    for (const t of transitions) {
      const machine = MACHINES[t.entity];
      const before = machine.resolveState({ value: t.from, context: t.context });
      const [after] = transition(machine, before, t.event as never);
      if (round === 0 && String(after.value) === t.to) agreed++;
    }
  }
  return {
    perSecond: (transitions.length * rounds) / ((performance.now() - start) / 1000),
    agreed,
    compared: transitions.length,
  };
}

/** The durability floor: appends of `bytes` each followed by fsync, as fast as the disk allows. */
export function fsyncFloor(bytes: number, appends: number): number {
  const dir = mkdtempSync(join(tmpdir(), 'coven-bench-floor-'));
  const fd = openSync(join(dir, 'append.log'), 'a');
  const chunk = Buffer.alloc(Math.max(1, Math.round(bytes)), 0x61);
  const start = performance.now();
  for (let i = 0; i < appends; i++) {
    writeSync(fd, chunk);
    fsyncSync(fd);
  }
  const perSecond = appends / ((performance.now() - start) / 1000);
  closeSync(fd);
  rmSync(dir, { recursive: true, force: true });
  return perSecond;
}

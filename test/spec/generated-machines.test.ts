import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { createActor, type AnyStateMachine } from 'xstate';
import { packageRoot } from '../../src/contract/package-root.js';
import { renderMachineFiles } from '../../tools/machine-codegen.js';
import {
  extensionIds,
  extensionSpec,
  generatedMachine,
  machineIds,
  permissiveMachine,
  sampleEvent,
  sampleInputs,
  spec,
  specOf,
  type AnyMachineId,
} from '../support/spec-fixtures.js';

interface WalkedTransition {
  from: string;
  to: string;
  on: string;
  actor: unknown;
  guard: unknown;
}

/** Reads the transitions back out of XState's state nodes, not out of the JSON. */
function walk(machine: AnyStateMachine): { states: Record<string, string>; transitions: WalkedTransition[] } {
  const states: Record<string, string> = {};
  const transitions: WalkedTransition[] = [];
  for (const [name, node] of Object.entries(machine.root.states)) {
    states[name] = node.type;
    for (const [on, alternatives] of node.transitions) {
      for (const t of alternatives) {
        const meta = (t.meta ?? {}) as { actor?: unknown; guard?: unknown };
        transitions.push({ from: name, to: t.target?.[0]?.key ?? '(none)', on, actor: meta.actor, guard: meta.guard });
      }
    }
  }
  return { states, transitions };
}

describe.each<AnyMachineId>([...machineIds, ...extensionIds])('generated %s', (id) => {
  const m = specOf(id);
  const machine = generatedMachine(id);
  const walked = walk(machine);

  test('has the spec machine id and initial state', () => {
    expect(machine.id).toBe(id);
    expect(machine.root.initial?.target[0]?.key).toBe(m.initial);
  });

  test('declares exactly the spec states, terminal ones as final', () => {
    expect(Object.keys(walked.states)).toEqual(m.states);
    for (const s of m.states) expect(walked.states[s], s).toBe(m.terminal.includes(s) ? 'final' : 'atomic');
  });

  test('agrees with the spec transition by transition, actor and guard text included', () => {
    const expected = m.transitions
      .map((t) => ({ from: t.from, to: t.to, on: t.on, actor: t.actor, guard: t.guard }))
      .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
    const actual = [...walked.transitions].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
    expect(actual).toEqual(expected);
  });

  test('every transition is refused for every actor but the contract one', () => {
    const permissive = permissiveMachine(id);
    for (const t of m.transitions) {
      for (const actor of spec.actors) {
        const snapshot = permissive.resolveState({
          value: t.from,
          context: createActor(permissive, { input: sampleInputs[id] }).getSnapshot().context,
        });
        const can = snapshot.can(sampleEvent(t.on, actor));
        expect(can, `${t.from} -> ${t.to} on ${t.on} sent by ${actor}`).toBe(actor === t.actor);
      }
    }
  });
});

describe('generated files', () => {
  test('match what the spec produces byte for byte (no drift)', () => {
    const root = packageRoot();
    for (const [file, content] of renderMachineFiles(spec, extensionSpec)) {
      const path = join(root, file);
      expect(existsSync(path), `${file} exists`).toBe(true);
      expect(readFileSync(path, 'utf8'), `${file} is stale: run npm run generate`).toBe(content);
    }
  });

  test('open with a do-not-edit header and contain a createMachine call for Stately', () => {
    for (const [file, content] of renderMachineFiles(spec, extensionSpec)) {
      expect(content.startsWith('// DO NOT EDIT'), file).toBe(true);
      if (file.endsWith('states.ts'))
        expect(content, `${file} imports nothing, so guards may use it`).not.toMatch(/^import /m);
      else if (file !== 'machines/index.ts') expect(content).toContain('.createMachine({');
    }
  });
});

import { expect } from 'vitest';
import * as machines from '../../machines/index.js';
import type { SpecMachine } from '../../src/spec/lifecycle-spec.js';

const exported = machines as unknown as Record<string, unknown>;
const pascal = (entity: string) => entity.replace(/(^|-)([a-z])/g, (_m, _dash: string, c: string) => c.toUpperCase());
const upper = (entity: string) => entity.replace(/-/g, '_').toUpperCase();

/** The typed constants generated for one machine, looked up by the names the generator promises. */
export function typedConstantsOf(entity: string) {
  const P = pascal(entity);
  const U = upper(entity);
  return {
    State: exported[`${P}State`] as Record<string, string>,
    EventType: exported[`${P}EventType`] as Record<string, string>,
    STATES: exported[`${U}_STATES`] as readonly string[],
    EVENT_TYPES: exported[`${U}_EVENT_TYPES`] as readonly string[],
    TERMINAL: exported[`${U}_TERMINAL_STATES`] as ReadonlySet<string>,
    LIVE: exported[`${U}_LIVE_STATES`] as ReadonlySet<string>,
    isState: exported[`is${P}State`] as (s: string) => boolean,
    isTerminal: exported[`is${P}Terminal`] as (s: string) => boolean,
    isLive: exported[`is${P}Live`] as (s: string) => boolean,
  };
}

/** The assertions every generated machine's typed constants must pass against its spec entry. */
export function expectConstantsMatchSpec(
  m: Pick<SpecMachine, 'states' | 'terminal' | 'transitions'> & { entity: string },
) {
  const c = typedConstantsOf(m.entity);
  const events = [...new Set(m.transitions.map((t) => t.on))];
  expect(c.STATES).toEqual(m.states);
  expect(Object.keys(c.State)).toEqual(m.states);
  for (const s of m.states) expect(c.State[s]).toBe(s);
  expect(c.EVENT_TYPES).toEqual(events);
  expect(Object.keys(c.EventType)).toEqual(events);
  for (const e of events) expect(c.EventType[e]).toBe(e);
  expect([...c.TERMINAL]).toEqual(m.terminal);
  expect([...c.LIVE]).toEqual(m.states.filter((s) => !m.terminal.includes(s)));
  for (const s of m.states) {
    expect(c.isState(s), s).toBe(true);
    expect(c.isTerminal(s), s).toBe(m.terminal.includes(s));
    expect(c.isLive(s), s).toBe(!m.terminal.includes(s));
  }
  for (const stranger of ['', 'unknown', 'Running', `${m.states[0]} `]) {
    expect(c.isState(stranger), stranger).toBe(false);
    expect(c.isTerminal(stranger), stranger).toBe(false);
    expect(c.isLive(stranger), stranger).toBe(false);
  }
}

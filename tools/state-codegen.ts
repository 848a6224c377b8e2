import type { SpecMachine } from '../src/spec/lifecycle-spec.js';

/** The naming rules the generated modules share; `run-hold` becomes `runHold`, `RunHold` and `RUN_HOLD`. */
export const camel = (entity: string) => entity.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());
export const pascal = (entity: string) => camel(entity).charAt(0).toUpperCase() + camel(entity).slice(1);
export const upper = (entity: string) => entity.replace(/-/g, '_').toUpperCase();
export const quote = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
export const key = (s: string) => (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(s) ? s : quote(s));

/** A machine as far as its typed constants need it: entity name, states, terminal states, event names. */
export type StateSource = Pick<SpecMachine, 'states' | 'terminal' | 'transitions'> & { id: string; entity: string };

function constObject(name: string, doc: string, values: readonly string[]): string[] {
  return [
    `/** ${doc} Both a value (\`${name}.x === 'x'\`) and the union type of those values. */`,
    `export const ${name} = {`,
    ...values.map((v) => `  ${key(v)}: ${quote(v)},`),
    '} as const;',
    `export type ${name} = (typeof ${name})[keyof typeof ${name}];`,
  ];
}

/** One item per line once a list no longer fits a readable line. */
function list(values: readonly string[], prefix: string, suffix: string): string[] {
  const oneLine = `${prefix}${values.map(quote).join(', ')}${suffix}`;
  return oneLine.length <= 120 ? [oneLine] : [prefix, ...values.map((v) => `  ${quote(v)},`), suffix];
}

/** Typed states, events and terminal/live sets of one machine, in spec order. */
export function stateLines(machine: StateSource): string[] {
  const P = pascal(machine.entity);
  const U = upper(machine.entity);
  const events = [...new Set(machine.transitions.map((t) => t.on))];
  const live = machine.states.filter((s) => !machine.terminal.includes(s));
  return [
    `// ${machine.id}`,
    ...constObject(`${P}State`, `The states of ${machine.id}.`, machine.states),
    ...constObject(`${P}EventType`, `The event names of ${machine.id}.`, events),
    `/** Every state of ${machine.id}, in spec order. */`,
    ...list(machine.states, `export const ${U}_STATES: readonly ${P}State[] = [`, '];'),
    `/** Every event name of ${machine.id}, in the order the spec first uses it. */`,
    ...list(events, `export const ${U}_EVENT_TYPES: readonly ${P}EventType[] = [`, '];'),
    `/** The terminal states of ${machine.id}: no transition leaves them. */`,
    ...list(
      machine.terminal,
      `export const ${U}_TERMINAL_STATES: ReadonlySet<${P}State> = new Set<${P}State>([`,
      ']);',
    ),
    `/** The live (non-terminal) states of ${machine.id}. */`,
    ...list(live, `export const ${U}_LIVE_STATES: ReadonlySet<${P}State> = new Set<${P}State>([`, ']);'),
    `/** \`value\` is a state of ${machine.id}. */`,
    `export const is${P}State = (value: string): value is ${P}State =>`,
    `  (${U}_STATES as readonly string[]).includes(value);`,
    `/** \`state\` is a terminal state of ${machine.id}. */`,
    `export const is${P}Terminal = (state: string): state is ${P}State =>`,
    `  (${U}_TERMINAL_STATES as ReadonlySet<string>).has(state);`,
    `/** \`state\` is a live (non-terminal) state of ${machine.id}. */`,
    `export const is${P}Live = (state: string): state is ${P}State =>`,
    `  (${U}_LIVE_STATES as ReadonlySet<string>).has(state);`,
    '',
  ];
}

/** Source of a states module: the typed constants of each machine, nothing imported. */
export function renderStates(header: string[], machines: readonly StateSource[]): string {
  return [...header, ...machines.flatMap(stateLines)].join('\n');
}

/** The contract machines, bundled at build time by src/dashboard/machines-plugin.ts. */
declare module 'virtual:coven-machines' {
  export interface SpecTransition {
    from: string;
    to: string;
    on: string;
    actor: string;
    guard?: { id: string; text: string };
  }
  export interface SpecMachine {
    id: string;
    entity: 'definition' | 'occurrence' | 'run' | 'attempt';
    initial: string;
    states: string[];
    terminal: string[];
    transitions: SpecTransition[];
  }
  /** spec/coven-automations/v1/state-machines.json's machines, in its order. */
  export const machines: SpecMachine[];
  /** Each machine's Graphviz SVG (docs/<entity>.svg), by entity. */
  export const diagrams: Record<string, string>;
}

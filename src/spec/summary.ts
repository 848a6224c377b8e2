import type { LifecycleSpec } from './lifecycle-spec.js';
import { checkSpecSoundness } from './soundness.js';

/** A plain-text overview of the four machines: states, terminals, transitions per actor, guards, proofs. */
export function summarizeSpec(spec: LifecycleSpec): string {
  const lines: string[] = [
    `${spec.schemaVersion}: ${spec.machines.length} lifecycle machines, ${spec.invariants.length} invariants`,
    '',
  ];
  for (const m of spec.machines) {
    const perActor = spec.actors
      .map((a) => [a, m.transitions.filter((t) => t.actor === a).length] as const)
      .filter(([, n]) => n > 0)
      .map(([a, n]) => `${a} ${n}`)
      .join(', ');
    const guarded = m.transitions.filter((t) => t.guard !== undefined).length;
    lines.push(
      `${m.id}  (initial ${m.initial})`,
      `  states      ${m.states.map((s) => (m.terminal.includes(s) ? `[${s}]` : s)).join(' ')}`,
      `  transitions ${m.transitions.length} (${guarded} guarded; ${perActor})`,
      '',
    );
  }
  const checks = checkSpecSoundness(spec);
  const failing = checks.filter((c) => c.problems.length > 0);
  lines.push(
    failing.length === 0
      ? `static proofs: all ${checks.length} hold ([terminal] states have no way out)`
      : `static proofs: ${failing.length} of ${checks.length} FAIL\n  ` +
          failing.flatMap((c) => c.problems).join('\n  '),
  );
  lines.push('', 'invariants:', ...spec.invariants.map((i) => `  ${i.id}`));
  return lines.join('\n');
}

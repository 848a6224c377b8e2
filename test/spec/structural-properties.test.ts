import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/contract/package-root.js';
import { INVARIANT_RULES_FILE, loadInvariantRules, parseInvariantRules } from '../../src/spec/invariant-rules.js';
import { loadLifecycleSpec, SpecFileError } from '../../src/spec/lifecycle-spec.js';
import { checkStructuralProperties } from '../../src/spec/structural-properties.js';
import { CONTRACT_INVARIANT_IDS } from '../../src/testkit/invariants/checks.js';
import { PLANTED_SPEC_EDITS } from '../../src/testkit/invariants/planted-spec-edits.js';

const seedPage = join(packageRoot(), '..', 'shared', 'seeds', '000_cba64313b6c04f70.txt');
const seedAvailable = existsSync(seedPage);
if (!seedAvailable) console.warn(`the contract's seed page is not at ${seedPage}: its sentences are not compared`);

const rules = loadInvariantRules();
const violations = (edit: (spec: ReturnType<typeof loadLifecycleSpec>) => void) => {
  const spec = loadLifecycleSpec();
  edit(spec);
  return checkStructuralProperties(spec, rules).filter((r) => r.problems.length > 0);
};

describe('structural properties of the ten invariants, over the spec graph as written', () => {
  it('the package spec satisfies every structural property, and each checked something', () => {
    const results = checkStructuralProperties(loadLifecycleSpec(), rules);
    expect(results.filter((r) => r.problems.length > 0)).toEqual([]);
    for (const r of results) expect(r.checked, r.property).toBeGreaterThan(0);
  });

  it('every contract invariant has a structural property, and every property names a declared invariant', () => {
    expect(new Set(rules.rules.map((r) => r.invariant))).toEqual(new Set(CONTRACT_INVARIANT_IDS));
    const ids = rules.rules.map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it.skipIf(!seedAvailable)("each rule quotes a sentence of the contract's lifecycle page verbatim", () => {
    const page = readFileSync(seedPage, 'utf8').replace(/\s+/g, ' ');
    for (const rule of rules.rules) expect(page, rule.id).toContain(rule.contract.replace(/\s+/g, ' '));
  });

  it('every property has a planted spec edit that it catches by name', () => {
    for (const rule of rules.rules)
      expect(
        PLANTED_SPEC_EDITS.some((p) => p.property === rule.id && p.invariant === rule.invariant),
        rule.id,
      ).toBe(true);
    for (const planted of PLANTED_SPEC_EDITS)
      expect(
        violations(planted.edit).map((r) => r.property),
        planted.name,
      ).toContain(planted.property);
  });

  it('a path violation is reported with a shortest path from the initial state that shows it', () => {
    const [found] = violations((spec) =>
      spec.machines
        .find((m) => m.id === 'occurrence.v1')!
        .transitions.push({ from: 'eligible', to: 'dispatching', on: 'attempt_adopted', actor: 'dispatcher' }),
    ).filter((r) => r.property === 'execution-passes-claim-and-adoption');
    expect(found!.problems).toEqual([
      "enters 'dispatching' without passing claim, then attempt_adopted or operator_recovery_attempt: " +
        'occurrence.v1 planned -eligibility_passed (scheduler)-> eligible -attempt_adopted (dispatcher)-> dispatching',
    ]);
  });

  it('a guard the contract requires is named when an edit drops it', () => {
    const found = violations((spec) => {
      const claim = spec.machines.find((m) => m.id === 'occurrence.v1')!.transitions.find((t) => t.on === 'claim')!;
      delete claim.guard;
    });
    expect(found.map((r) => r.problems).flat()).toEqual([
      "occurrence.v1 eligible -> claimed on claim (scheduler) carries no guard where the contract requires 'claimCompareAndSet': " +
        'occurrence.v1 planned -eligibility_passed (scheduler)-> eligible -claim (scheduler)-> claimed',
    ]);
  });

  it('a state that starts out in an execution state fails before any transition is taken', () => {
    const found = violations((spec) => {
      spec.machines.find((m) => m.id === 'run.v1')!.initial = 'running';
    });
    expect(found.map((r) => r.property)).toContain('execution-passes-claim-and-adoption');
  });

  it('the rules file is refused by its schema when a rule carries an unknown field or kind', () => {
    const text = readFileSync(join(packageRoot(), INVARIANT_RULES_FILE), 'utf8');
    const doc = JSON.parse(text) as { rules: Array<Record<string, unknown>> };
    doc.rules[0]!.extra = true;
    expect(() => parseInvariantRules(JSON.stringify(doc))).toThrow(SpecFileError);
    doc.rules[0] = { ...doc.rules[1], kind: 'sometimes' };
    expect(() => parseInvariantRules(JSON.stringify(doc))).toThrow(SpecFileError);
  });
});

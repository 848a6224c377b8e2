import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import * as machines from '../../machines/index.js';
import { AttemptState, DefinitionState, OccurrenceState, RunState } from '../../machines/index.js';
import type { EntityTransition } from '../../src/actors/entity-transition.js';
import { packageRoot } from '../../src/contract/package-root.js';
import type { DefinitionRecord } from '../../src/domain/definition-records.js';
import {
  stateOf,
  type AttemptAttributes,
  type AttemptRecord,
  type OccurrenceRecord,
  type RunRecord,
  type StateOf,
} from '../../src/domain/records.js';

/**
 * Issue 22: lifecycle states are compared through the generated constants (`OccurrenceState.running`), so the
 * type checker catches a comparison against another machine's state. This scanner finds what slipped back to a
 * string literal. It reads the AST, so a literal only counts where it meets something state-like.
 */
const ROOT = packageRoot();
const SRC = join(ROOT, 'src');

/**
 * Every state name of every generated machine, contract and extension, from the generated `*_STATES` arrays. All
 * but `none`: besides the delivery machine's initial state, it is every entity's state before its record exists
 * (the `from` of a creation on the changefeed), which no one machine's constants own.
 */
const STATE_NAMES: ReadonlySet<string> = new Set(
  Object.entries(machines)
    .filter(([name, value]) => /^[A-Z_]+_STATES$/.test(name) && Array.isArray(value))
    .flatMap(([, value]) => value as readonly string[])
    .filter((state) => state !== 'none'),
);

/** Text of an expression that reads a lifecycle state. */
const STATE_LIKE = /state|State|stateOf\(|snapshot\.value|\.to\b|\.from\b|lifecycleState/;

/**
 * Comparisons that meet the rules but are not lifecycle-state comparisons, each with its reason. Keyed by
 * `file:expression text`, so a moved line keeps its exception and a new comparison does not inherit one.
 */
const NOT_LIFECYCLE_STATES: ReadonlyArray<{ site: string; reason: string }> = [];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

const isGenerated = (text: string) => text.startsWith('// DO NOT EDIT: generated');

function stateLiteral(node: ts.Node): string | undefined {
  const inner = ts.isParenthesizedExpression(node) ? node.expression : node;
  if (ts.isStringLiteral(inner) || ts.isNoSubstitutionTemplateLiteral(inner)) {
    return STATE_NAMES.has(inner.text) ? inner.text : undefined;
  }
  return undefined;
}

const EQUALITY = new Set([
  ts.SyntaxKind.EqualsEqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsEqualsToken,
  ts.SyntaxKind.EqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsToken,
]);

/** An array literal of string literals, every one of them a state name. */
function stateNameArray(node: ts.Node | undefined): boolean {
  if (node === undefined || !ts.isArrayLiteralExpression(node) || node.elements.length === 0) return false;
  return node.elements.every((e) => stateLiteral(e) !== undefined);
}

interface Hit {
  at: string;
  rule: string;
  text: string;
}

/** The rule a node breaks, if any. */
function ruleBroken(node: ts.Node, sf: ts.SourceFile): string | undefined {
  if (ts.isBinaryExpression(node) && EQUALITY.has(node.operatorToken.kind)) {
    const [literal, other] = stateLiteral(node.right) !== undefined ? [node.right, node.left] : [node.left, node.right];
    if (stateLiteral(literal) !== undefined && STATE_LIKE.test(other.getText(sf))) return 'equality';
  }
  if (ts.isCaseClause(node) && stateLiteral(node.expression) !== undefined) {
    const switched = node.parent.parent;
    if (STATE_LIKE.test(switched.expression.getText(sf))) return 'case';
  }
  if (ts.isNewExpression(node) && node.expression.getText(sf) === 'Set' && stateNameArray(node.arguments?.[0])) {
    return 'new Set';
  }
  if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
    const method = node.expression.name.text;
    if (['has', 'includes', 'matches'].includes(method)) {
      if (node.arguments.length === 1 && stateLiteral(node.arguments[0]!) !== undefined) return `.${method}(literal)`;
      if (stateNameArray(node.expression.expression)) return `[literals].${method}`;
    }
  }
  return undefined;
}

/** The rules broken in a snippet, in source order (how the scanner is itself tested). */
function rulesIn(snippet: string): string[] {
  const sf = ts.createSourceFile('probe.ts', snippet, ts.ScriptTarget.Latest, true);
  const rules: string[] = [];
  const visit = (node: ts.Node): void => {
    const rule = ruleBroken(node, sf);
    if (rule !== undefined) rules.push(rule);
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return rules;
}

function scan(path: string): Hit[] {
  const text = readFileSync(path, 'utf8');
  if (isGenerated(text)) return [];
  const sf = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const file = relative(ROOT, path);
  const hits: Hit[] = [];
  const visit = (node: ts.Node): void => {
    const rule = ruleBroken(node, sf);
    if (rule !== undefined) {
      const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
      hits.push({ at: `${file}:${line}`, rule, text: node.getText(sf).replace(/\s+/g, ' ') });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return hits.filter((h) => !NOT_LIFECYCLE_STATES.some((e) => e.site === `${file}:${h.text}`));
}

describe('lifecycle states are compared through the generated constants', () => {
  it('knows the state names of every generated machine', () => {
    expect(STATE_NAMES.has('recovery_required')).toBe(true);
    expect(STATE_NAMES.has('quarantined')).toBe(true);
    expect(STATE_NAMES.has('tombstoned')).toBe(true);
  });

  it('the scanner flags each kind of string-literal state comparison', () => {
    const probe = [
      "if (stateOf(o) === 'running') f();",
      "if (committed.to !== 'claimed') f();",
      "switch (state) { case 'eligible': break; }",
      "const LIVE = new Set(['claimed', 'running']);",
      "if (states.includes('active')) f();",
      "if (['planned', 'eligible'].includes(state)) f();",
    ].join('\n');
    const rules = rulesIn(probe);
    expect(rules).toEqual(['equality', 'equality', 'case', 'new Set', '.includes(literal)', '[literals].includes']);
  });

  it('the scanner leaves runtime outcomes and other non-state comparisons alone', () => {
    const probe = [
      "if (result.outcome === 'started') f();",
      "if (observation.status === 'running') f();",
      "const PRE = new Set(['spawn_failed', 'failed']);",
    ].join('\n');
    expect(rulesIn(probe)).toEqual([]);
  });

  it('typed reads give each record its own machine’s states, so a wrong-machine comparison does not compile', () => {
    // `npx tsc -p tsconfig.json` checks this file: each @ts-expect-error fails the build if the error goes away.
    const record = (value: string) => ({ data: { snapshot: { value } } }) as never;
    const occurrence: OccurrenceRecord = record('planned');
    const run: RunRecord = record('accepted');
    const attempt: AttemptRecord = record('adopted');
    const definition: DefinitionRecord = record('draft');
    const seen = [
      stateOf(occurrence) === OccurrenceState.planned,
      stateOf(run) === RunState.accepted,
      stateOf(attempt) === AttemptState.adopted,
      stateOf(definition) === DefinitionState.draft,
      // @ts-expect-error accepted is a run state, never an occurrence's
      stateOf(occurrence) === RunState.accepted,
      // @ts-expect-error planned is an occurrence state, never an attempt's
      stateOf(attempt) === OccurrenceState.planned,
      // @ts-expect-error draft is a definition state, never a run's
      stateOf(run) === DefinitionState.draft,
    ];
    const moved = { from: 'adopted', to: 'dispatching' } as EntityTransition<
      AttemptAttributes,
      StateOf<AttemptAttributes>
    >;
    // @ts-expect-error a committed attempt transition never reaches an occurrence-only state
    seen.push(moved.to === OccurrenceState.claimed);
    expect(seen).toEqual([true, true, true, true, false, false, false, false]);
  });

  it('src/ (outside generated code) compares no lifecycle state to a string literal', () => {
    const hits = sourceFiles(SRC).flatMap(scan);
    const report = hits.map((h) => `${h.at} [${h.rule}] ${h.text}`);
    expect(report, `${hits.length} string-literal state comparisons:\n${report.join('\n')}`).toEqual([]);
  });
});

import { DefinitionState } from '../../machines/index.js';
import { readFileSync } from 'node:fs';
import { checkDefinitionBody } from '../domain/definition-body.js';
import { toPlainJson } from '../command-handler/plain-json.js';
import { integrityOf } from '../contract/digest.js';
import { ContractError } from '../contract/errors.js';
import canonicalize from 'canonicalize';
import { OPERATOR_CALLER } from '../domain/read-acl.js';
import { createEngine } from '../engine/engine.js';
import { MemoryStore } from '../store/memory-store.js';
import { CliError, envelope, report, type CliEngine, type CliOptions, type CliOutput } from './context.js';
import { listProblems } from './error-line.js';
import { extensionTrigger, SCHEDULE_EXTENSION } from '../schedule/schedule-extension.js';

/**
 * A JSON file as plain data, checked like a command's body (size, nesting depth, syntax), and refused with
 * VALIDATION_FAILED unless it holds an object or an array: a `null` file is bad input, not an internal error.
 */
export function readJsonFile(file: string): Record<string, unknown> | unknown[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new CliError(`cannot read ${file}: ${(error as Error).message}`);
  }
  const value = toPlainJson(text, file);
  if (typeof value !== 'object' || value === null) {
    throw new ContractError(
      'VALIDATION_FAILED',
      `${file} must hold a JSON object or array, not ${value === null ? 'null' : `a ${typeof value}`}`,
      { field: file },
    );
  }
  return value as Record<string, unknown> | unknown[];
}

interface ImportFailure {
  automationId: string;
  code: string;
  message: string;
  problems?: string[];
}

/** One line per failed definition, naming it, its code, its message and the first few fields that failed. */
function failureLines(failures: readonly ImportFailure[], total: number): string[] {
  const lines = failures.map((f) => {
    const problems = f.problems === undefined || f.problems.length === 0 ? '' : `: ${listProblems(f.problems)}`;
    return `failed: ${f.automationId}: ${f.code} ${f.message}${problems}`;
  });
  if (total > failures.length) lines.push(`failed: and ${total - failures.length} more`);
  return lines;
}

function importSummary(result: Record<string, unknown>): string {
  const skipped = result.skipped as Array<{ automationId: string; reason: string }>;
  const failed = (result.failures as unknown[]).length;
  return [
    `imported: ${(result.imported as string[]).join(', ') || 'none'}`,
    `skipped: ${skipped.length === 0 ? 'none' : skipped.map((s) => `${s.automationId} (${s.reason})`).join('; ')}`,
    `failed: ${failed === 0 ? 'none' : `${failed} (listed below)`}`,
  ].join('; ');
}

/**
 * Imports flat legacy definitions in one legacy.import.v1 command. Exits 0 only when none failed: an import
 * whose every definition fails is refused and commits nothing; a partial one commits what passed and names
 * each definition that failed, exiting 1.
 */
async function importFlat(
  engine: CliEngine,
  definitions: unknown[],
  options: CliOptions,
  out: CliOutput,
): Promise<number> {
  const response = await engine.commands.handle(
    envelope('legacy.import.v1', { source: 'flat-definitions', definitions }),
  );
  const status = report(response, options, importSummary, out);
  const details = (response.outcome === 'rejected' ? response.error?.details : response.result) as
    { failures?: ImportFailure[]; failed?: number } | undefined;
  const failures = details?.failures ?? [];
  if (options.json !== true)
    for (const line of failureLines(failures, details?.failed ?? failures.length)) out.error(line);
  return status !== 0 || failures.length > 0 ? 1 : 0;
}

/** What the stored body keeps beside what a definition file says: revision, state, digest and audit fields. */
const KEPT_BY_THE_STORE = new Set(['revision', 'lifecycleState', 'integrity', 'provenance', 'deletion']);
const userFields = (body: Record<string, unknown>): string =>
  canonicalize(Object.fromEntries(Object.entries(body).filter(([key]) => !KEPT_BY_THE_STORE.has(key)))) ?? '';

/**
 * A file scheduled by the schedule extension may leave out the trigger the contract requires: it is the one that
 * names the extension, in the extension's zone.
 */
function withExtensionTrigger(body: Record<string, unknown>): Record<string, unknown> {
  const extension = (body.extensions as Record<string, unknown> | undefined)?.[SCHEDULE_EXTENSION];
  if (body.trigger !== undefined || extension === null || typeof extension !== 'object') return body;
  const timezone = (extension as { timezone?: unknown }).timezone;
  return typeof timezone === 'string' ? { ...body, trigger: extensionTrigger(timezone) } : body;
}

/**
 * Creates (draft, then paused) or revises a rich definition, recomputing its revision and integrity. A new
 * definition takes two commands, so the second body is checked before the first is sent: a body only the
 * paused revision would refuse leaves no draft behind. A file that says what the current revision says
 * commits nothing: a re-apply is not a change.
 */
async function applyRich(
  engine: CliEngine,
  body: Record<string, unknown>,
  options: CliOptions,
  out: CliOutput,
): Promise<number> {
  const current = await engine.commands.handle(envelope('definition.get.v1', { automationId: body.automationId }));
  const { integrity: _ignored, ...rest } = withExtensionTrigger(body);
  const withIntegrity = (b: Record<string, unknown>) => ({ ...b, integrity: integrityOf(b) });
  if (current.outcome === 'rejected') {
    const paused = withIntegrity({ ...rest, revision: 2, lifecycleState: 'paused' });
    checkDefinitionBody(paused);
    const created = await engine.commands.handle(
      envelope('definition.create.v1', {
        definition: withIntegrity({ ...rest, revision: 1, lifecycleState: 'draft' }),
      }),
    );
    if (created.outcome === 'rejected') return report(created, options, undefined, out);
    const revised = await engine.commands.handle(envelope('definition.revise.v1', { definition: paused }, 1));
    return report(revised, options, undefined, out);
  }
  const revision = current.result!.currentRevision as number;
  const state = String(current.result!.lifecycleState);
  if (userFields(rest) === userFields(current.result!.definition as Record<string, unknown>)) {
    const id = String(body.automationId);
    if (options.json === true)
      out.log(JSON.stringify({ automationId: id, lifecycleState: state, revision, changed: false }, null, 2));
    else out.log(`${id}: unchanged (revision ${revision}, ${state}); nothing committed`);
    return 0;
  }
  const lifecycleState = state === DefinitionState.active ? 'active' : 'paused';
  return report(
    await engine.commands.handle(
      envelope(
        'definition.revise.v1',
        { definition: withIntegrity({ ...rest, revision: revision + 1, lifecycleState }) },
        revision,
      ),
    ),
    options,
    undefined,
    out,
  );
}

/** `apply -f <file>`: a rich contract definition, or a flat legacy definition (or an array of them). */
export async function applyFile(
  engine: CliEngine,
  file: string,
  options: CliOptions,
  out: CliOutput = console,
): Promise<number> {
  const body = readJsonFile(file);
  if (Array.isArray(body)) return importFlat(engine, body, options, out);
  if (body.schemaVersion === 1) return importFlat(engine, [body], options, out);
  return applyRich(engine, body, options, out);
}

/**
 * `apply` before its store exists: the file is applied first to an engine on a memory store, and when that
 * commits nothing (a file that cannot be read, fails validation, or whose every flat definition fails) its
 * refusal is printed and the exit status answered, so a failed apply creates no store. Undefined when the
 * rehearsal committed something: the real apply follows.
 */
export async function rehearseApply(file: string, options: CliOptions): Promise<number | undefined> {
  const held: Array<() => void> = [];
  const out: CliOutput = {
    log: (line) => void held.push(() => console.log(line)),
    error: (line) => void held.push(() => console.error(line)),
  };
  const engine = createEngine({ store: new MemoryStore(), runtimes: [] });
  const rehearsal: CliEngine = {
    commands: { handle: (raw) => engine.commands.handle(raw, OPERATOR_CALLER) },
    latestAttempt: () => Promise.reject(new Error('a rehearsal has no runs')),
    follow: () => {
      throw new Error('a rehearsal has no changefeed to follow');
    },
  };
  const status = await applyFile(rehearsal, file, options, out);
  const listed = await engine.commands.handle(envelope('definition.list.v1', { lifecycleState: 'all' }));
  if (status === 0 || (listed.result?.definitions as unknown[] | undefined)?.length !== 0) return undefined;
  for (const print of held) print();
  return status;
}

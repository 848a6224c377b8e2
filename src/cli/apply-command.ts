import { DefinitionState } from '../../machines/index.js';
import { readFileSync } from 'node:fs';
import { checkDefinitionBody } from '../domain/definition-body.js';
import { toPlainJson } from '../command-handler/plain-json.js';
import { integrityOf } from '../contract/digest.js';
import { ContractError } from '../contract/errors.js';
import { CliError, envelope, report, type CliEngine, type CliOptions } from './context.js';
import { listProblems } from './error-line.js';

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
async function importFlat(engine: CliEngine, definitions: unknown[], options: CliOptions): Promise<number> {
  const response = await engine.commands.handle(
    envelope('legacy.import.v1', { source: 'flat-definitions', definitions }),
  );
  const status = report(response, options, importSummary);
  const details = (response.outcome === 'rejected' ? response.error?.details : response.result) as
    { failures?: ImportFailure[]; failed?: number } | undefined;
  const failures = details?.failures ?? [];
  if (options.json !== true)
    for (const line of failureLines(failures, details?.failed ?? failures.length)) console.error(line);
  return status !== 0 || failures.length > 0 ? 1 : 0;
}

/**
 * Creates (draft, then paused) or revises a rich definition, recomputing its revision and integrity. A new
 * definition takes two commands, so the second body is checked before the first is sent: a body only the
 * paused revision would refuse leaves no draft behind.
 */
async function applyRich(engine: CliEngine, body: Record<string, unknown>, options: CliOptions): Promise<number> {
  const current = await engine.commands.handle(envelope('definition.get.v1', { automationId: body.automationId }));
  const { integrity: _ignored, ...rest } = body;
  const withIntegrity = (b: Record<string, unknown>) => ({ ...b, integrity: integrityOf(b) });
  if (current.outcome === 'rejected') {
    const paused = withIntegrity({ ...rest, revision: 2, lifecycleState: 'paused' });
    checkDefinitionBody(paused);
    const created = await engine.commands.handle(
      envelope('definition.create.v1', {
        definition: withIntegrity({ ...rest, revision: 1, lifecycleState: 'draft' }),
      }),
    );
    if (created.outcome === 'rejected') return report(created, options);
    return report(await engine.commands.handle(envelope('definition.revise.v1', { definition: paused }, 1)), options);
  }
  const revision = current.result!.currentRevision as number;
  const lifecycleState = current.result!.lifecycleState === DefinitionState.active ? 'active' : 'paused';
  return report(
    await engine.commands.handle(
      envelope(
        'definition.revise.v1',
        { definition: withIntegrity({ ...rest, revision: revision + 1, lifecycleState }) },
        revision,
      ),
    ),
    options,
  );
}

/** `apply -f <file>`: a rich contract definition, or a flat legacy definition (or an array of them). */
export async function applyFile(engine: CliEngine, file: string, options: CliOptions): Promise<number> {
  const body = readJsonFile(file);
  if (Array.isArray(body)) return importFlat(engine, body, options);
  if (body.schemaVersion === 1) return importFlat(engine, [body], options);
  return applyRich(engine, body, options);
}

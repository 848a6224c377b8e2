import type { ErrorEnvelope } from '../contract/errors.js';

/** How many failed fields a human error line names before it says how many more there are. */
export const PROBLEMS_SHOWN = 5;

/** `payload.definition` → `/definition`, `payload.definitions[daily]` → `/definitions/daily`. */
function pointerOf(field: unknown): string {
  if (typeof field !== 'string') return '';
  const parts = field
    .replace(/^payload\.?/, '')
    .replace(/\[([^\]]*)\]/g, '.$1')
    .split('.')
    .filter((p) => p.length > 0);
  return parts.length === 0 ? '' : `/${parts.join('/')}`;
}

/** A schema problem split into where (`''` for the root) and what is wrong there. */
interface Problem {
  path: string;
  message: string;
}

function parse(problem: string): Problem | undefined {
  const match = /^(\(root\)|\/[^:]*): (.*)$/s.exec(problem);
  return match === null ? undefined : { path: match[1] === '(root)' ? '' : match[1]!, message: match[2]! };
}

/** ajv's wrapper of a failed conditional: it says a `then`/`else` branch failed, not what failed in it. */
const BRANCH = /^must match "(then|else)" schema$/;

/**
 * A problem as a person reads it: `/definition/action/prompt must be string`; a missing property as the field
 * that is required (`/definition/policies/retry/backoffSeconds is required`); a failed branch with nothing
 * more specific beside it as one sentence naming the field whose other values set the condition.
 */
function sentence({ path, message }: Problem, prefix: string): string {
  const where = `${prefix}${path}`;
  const required = /^must have required property '(.*)'$/.exec(message);
  if (required !== null) return `${where}/${required[1]!} is required`;
  if (BRANCH.test(message))
    return `${where === '' ? 'the input' : where} does not meet a condition that its other fields set`;
  return where === '' ? `(root) ${message}` : `${where} ${message}`;
}

/**
 * The problems worth reading: a failed `then`/`else` branch is dropped when a problem at or under its path
 * says what failed inside it (ajv reports both).
 */
function readable(problems: readonly string[]): Array<Problem | string> {
  const parsed = problems.map((p) => parse(p) ?? p);
  const specific = parsed.filter((p): p is Problem => typeof p !== 'string' && !BRANCH.test(p.message));
  return parsed.filter(
    (p) =>
      typeof p === 'string' ||
      !BRANCH.test(p.message) ||
      !specific.some((s) => s.path === p.path || s.path.startsWith(`${p.path}/`)),
  );
}

/** The first few of `problems`, joined, then "and N more". */
export function listProblems(problems: readonly string[], prefix = ''): string {
  const all = readable(problems);
  const shown = all.slice(0, PROBLEMS_SHOWN).map((p) => (typeof p === 'string' ? p : sentence(p, prefix)));
  const more = all.length - shown.length;
  return shown.join('; ') + (more > 0 ? `; and ${more} more` : '');
}

/** The CLI command that sends each contract command a lifecycle refusal names as a next step. */
const CLI_VERB: Readonly<Record<string, string>> = {
  'definition.activate.v1': 'activate',
  'definition.pause.v1': 'pause',
  'definition.disable.v1': 'disable',
  'x-coven-automata.definition.reenable.v1': 'enable',
  'definition.tombstone.v1': 'tombstone',
};

/**
 * A lifecycle refusal's cause and, as CLI commands, the moves that would fix it (the details the command
 * handler adds to ILLEGAL_TRANSITION); undefined for any other error.
 */
function lifecycleMoves(details: Record<string, unknown> | undefined): string | undefined {
  const cause = details?.cause;
  const next = details?.nextCommands;
  const id = details?.automationId;
  if (typeof cause !== 'string' || !Array.isArray(next) || typeof id !== 'string') return undefined;
  const fixInFile = Array.isArray(details?.unmet) ? 'fix the definition file and run ' : '';
  const steps = next.map((command) =>
    command === 'definition.revise.v1'
      ? `${fixInFile}coven-automata apply -f <file>`
      : `coven-automata ${CLI_VERB[String(command)] ?? String(command)} ${id}`,
  );
  return steps.length === 0 ? cause : `${cause}; next: ${steps.join(', then ')}`;
}

/**
 * The one line a person reads for a typed error: code, HTTP status, message and — when the details list
 * them and the message does not already — which fields failed and why.
 *
 * @example
 * ```ts
 * errorLine({ code: 'VALIDATION_FAILED', httpStatus: 400, message: 'automation definition failed validation',
 *   details: { field: 'payload.definition', problems: ['/action/prompt: must be string'] } });
 * // 'VALIDATION_FAILED (400): automation definition failed validation: /definition/action/prompt must be string'
 * ```
 */
export function errorLine(error: Pick<ErrorEnvelope, 'code' | 'httpStatus' | 'message' | 'details'>): string {
  const moves = lifecycleMoves(error.details);
  if (moves !== undefined) return `${error.code} (${error.httpStatus}): ${moves}`;
  const head = `${error.code} (${error.httpStatus}): ${error.message}`;
  const problems = error.details?.problems;
  if (!Array.isArray(problems) || problems.length === 0) return head;
  const texts = problems.filter((p): p is string => typeof p === 'string');
  if (texts.length === 0) return head;
  // A message that quotes its own raw problems (the envelope's) says them once, as sentences.
  const quoted = error.message.indexOf(texts[0]!);
  const message = quoted < 0 ? error.message : error.message.slice(0, quoted).replace(/[:;\s]+$/, '');
  const listed = listProblems(texts, pointerOf(error.details?.field));
  return `${error.code} (${error.httpStatus}): ${message === '' ? listed : `${message}: ${listed}`}`;
}

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

/** A schema problem (`/action/prompt: must be string`) as a path under `prefix` and what is wrong there. */
function located(problem: string, prefix: string): string {
  const match = /^(\(root\)|\/[^:]*): (.*)$/s.exec(problem);
  if (match === null) return problem;
  const path = match[1] === '(root)' ? '' : match[1]!;
  return `${prefix}${path}` === '' ? `(root) ${match[2]!}` : `${prefix}${path} ${match[2]!}`;
}

/** The first few of `problems`, joined, then "and N more". */
export function listProblems(problems: readonly string[], prefix = ''): string {
  const shown = problems.slice(0, PROBLEMS_SHOWN).map((p) => located(p, prefix));
  const more = problems.length - shown.length;
  return shown.join('; ') + (more > 0 ? `; and ${more} more` : '');
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
  const head = `${error.code} (${error.httpStatus}): ${error.message}`;
  const problems = error.details?.problems;
  if (!Array.isArray(problems) || problems.length === 0) return head;
  const texts = problems.filter((p): p is string => typeof p === 'string');
  if (texts.length === 0 || error.message.includes(texts[0]!)) return head;
  return `${head}: ${listProblems(texts, pointerOf(error.details?.field))}`;
}

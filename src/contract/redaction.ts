/**
 * Redaction of published views (events, reports, doctor, conformance output, logs): they never carry prompt
 * text, absolute paths or credentials. Three rules, applied to any JSON value: a prompt-like key loses its value;
 * a path key holding an absolute path loses it; and in every string, credential patterns and absolute paths are
 * replaced. Relative paths (a definition's `work/proj`) and ids are kept: they are what operators act on.
 */

export const REDACTED = {
  prompt: '[redacted:prompt]',
  path: '[redacted:path]',
  secret: '[redacted:secret]',
} as const;

const PROMPT_KEY = /prompt|instructions/i;
const PATH_KEY = /^(cwd|path|dir|directory|file|filename|workingDirectory|home)$|(Path|Dir|Directory|File)$/;

const SECRET_PATTERNS: readonly RegExp[] = [
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)/g,
  /\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}/g,
  /\bgh[pousr]_[A-Za-z0-9]{20,}/g,
  /\bxox[abpr]-[A-Za-z0-9-]{10,}/g,
  /\bAKIA[0-9A-Z]{16}\b/g,
  /\bBearer\s+[A-Za-z0-9._~+/-]{8,}=*/gi,
  /\b(password|passwd|secret|token|api[_-]?key|access[_-]?key)\s*[=:]\s*[^\s,;"']+/gi,
];

/** An absolute POSIX path (two segments or more) or a Windows drive path, where a path can start. */
const ABSOLUTE_PATH = /(^|[\s"'=(,[])(\/[A-Za-z0-9._~@+-]+(?:\/[A-Za-z0-9._~@+-]*)+|[A-Za-z]:\\[^\s"',)]+)/g;

const isAbsolute = (value: string) => value.startsWith('/') || /^[A-Za-z]:\\/.test(value) || value.startsWith('~/');

/**
 * What every rule above needs somewhere in a string before it can match: each pattern's fixed lead (a key
 * marker, a token prefix, a credential word, a slash or a drive colon), case folded. Most published strings are
 * ids, states and instants that have none of it, and are passed by one test instead of eight replacements.
 */
const MAY_NEED_REDACTION = new RegExp(
  [
    ...[
      '-----BEGIN',
      String.raw`\b(?:sk|pk|rk)-`,
      String.raw`\bgh[pousr]_`,
      String.raw`\bxox[abpr]-`,
      String.raw`\bAKIA`,
    ],
    ...[String.raw`\bBearer\s`, 'password', 'passwd', 'secret', 'token', 'api[_-]?key', 'access[_-]?key'],
    ...['/', String.raw`[A-Za-z]:\\`],
  ].join('|'),
  'i',
);

/** One string with credentials and absolute paths replaced. */
export function redactText(text: string): string {
  return MAY_NEED_REDACTION.test(text) ? redactEveryRule(text) : text;
}

/** {@link redactText} without the lead test: exported for the property that the test never passes a match. */
export function redactEveryRule(text: string): string {
  let out = text;
  for (const pattern of SECRET_PATTERNS) out = out.replace(pattern, REDACTED.secret);
  return out.replace(ABSOLUTE_PATH, (_m, lead: string) => `${lead}${REDACTED.path}`);
}

function redactEntry(key: string, value: unknown): unknown {
  if (PROMPT_KEY.test(key) && typeof value === 'string') return REDACTED.prompt;
  if (PATH_KEY.test(key) && typeof value === 'string' && isAbsolute(value)) return REDACTED.path;
  return redactPublished(value);
}

/**
 * A copy of `value` fit to publish, under the rules above. Values that are already clean come back equal.
 *
 * @example
 * ```ts
 * redactPublished({ prompt: 'Read my journal', cwd: '/home/ana/notes', note: 'token=abc123' });
 * // { prompt: '[redacted:prompt]', cwd: '[redacted:path]', note: '[redacted:secret]' }
 * ```
 */
export function redactPublished<T>(value: T): T {
  if (typeof value === 'string') return redactText(value) as T;
  if (Array.isArray(value)) return value.map((v) => redactPublished(v as unknown)) as T;
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, redactEntry(k, v)]),
    ) as T;
  return value;
}

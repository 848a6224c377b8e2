/**
 * The locale variables, by exact name: POSIX's categories and `LC_ALL`, and the six glibc adds. A prefix
 * (`LC_*`) would also pass whatever else someone names `LC_…` (a token, say), so there is none.
 */
export const LOCALE_VARIABLES: readonly string[] = [
  'LANG',
  'LANGUAGE',
  'LC_ALL',
  'LC_COLLATE',
  'LC_CTYPE',
  'LC_MESSAGES',
  'LC_MONETARY',
  'LC_NUMERIC',
  'LC_TIME',
  'LC_ADDRESS',
  'LC_IDENTIFICATION',
  'LC_MEASUREMENT',
  'LC_NAME',
  'LC_PAPER',
  'LC_TELEPHONE',
];

/**
 * The engine's environment variables a child session receives by default, each by its exact name: what a
 * shell command needs to find programs, its home, its locale and its temporary folder, and nothing that
 * usually carries a credential. Everything else (tokens, `SSH_AUTH_SOCK`, cloud keys, `NODE_OPTIONS`,
 * `LD_PRELOAD`, the engine's own `COVEN_*` settings) stays out unless passed by name.
 */
export const CHILD_ENV_ALLOWLIST: readonly string[] = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  ...LOCALE_VARIABLES,
  'TZ',
  'TERM',
  'TMPDIR',
];

/** A POSIX environment variable name. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

const ALLOWED = new Set(CHILD_ENV_ALLOWLIST);

/**
 * The complete environment of a child session: the allowlisted parent variables, then the parent variables
 * named in `passEnv` (when set), then fixed `env` values, then the session's own `COVEN_*` variables, which
 * nothing can override.
 *
 * @example
 * ```ts
 * childEnvironment(process.env, { passEnv: ['OPENAI_API_KEY'] }, { COVEN_PROMPT: 'Write the notes.' });
 * ```
 */
export function childEnvironment(
  parent: NodeJS.ProcessEnv,
  options: { passEnv?: readonly string[]; env?: Readonly<Record<string, string>> },
  session: Readonly<Record<string, string>>,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(parent)) if (value !== undefined && ALLOWED.has(name)) env[name] = value;
  for (const name of options.passEnv ?? []) {
    const value = parent[name];
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...options.env, ...session };
}

/** Throws when a name given to `passEnv`/`env` is not a variable name (so a typo cannot pass `A=B` silently). */
export function checkEnvNames(names: Iterable<string>, option: string): void {
  for (const name of names)
    if (!ENV_NAME.test(name)) throw new Error(`${option}: ${JSON.stringify(name)} is not an environment variable name`);
}

import { CliError } from './context.js';

/**
 * Loads an optional peer dependency a command needs (`load` is its `import()`, so the package keeps its
 * types). These packages are not installed with coven-automata, to keep embedders' installs small; a missing
 * one is a user error naming what to install, while any other load failure is passed on as it is.
 */
export async function optionalPackage<T>(name: string, purpose: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (!isMissing(error, name)) throw error;
    throw new CliError(`${purpose} needs the optional package ${name}, which is not installed: npm install ${name}`);
  }
}

/** The import failed because `name` itself cannot be found (not because something inside it failed). */
function isMissing(error: unknown, name: string): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return (
    (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') &&
    typeof message === 'string' &&
    message.includes(`'${name}'`)
  );
}

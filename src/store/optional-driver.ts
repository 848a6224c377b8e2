import { StoreDriverMissingError } from './store.js';

/** The import failed because the package itself cannot be found (not because something inside it failed). */
function isMissingPackage(error: unknown, packageName: string): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return (
    (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') &&
    typeof message === 'string' &&
    message.includes(`'${packageName}'`)
  );
}

/**
 * A loader for a store's optional peer dependency: `importer` runs on the first call, so importing coven-automata
 * neither needs the package installed nor pays for loading it. A missing package fails with
 * {@link StoreDriverMissingError} and is not remembered (a later call after installing it may succeed); any other
 * load failure (a broken native build, say) is passed on as it is, since reinstalling is not then the whole answer.
 *
 * @example
 * ```ts
 * export const loadPostgresDriver = optionalDriver('pg', () => import('pg'));
 * const pg = await loadPostgresDriver();
 * ```
 */
export function optionalDriver<T>(packageName: string, importer: () => Promise<{ default: T }>): () => Promise<T> {
  let driver: Promise<T> | undefined;
  return () => {
    driver ??= importer().then(
      (module) => module.default,
      (error: unknown) => {
        driver = undefined;
        if (isMissingPackage(error, packageName))
          throw new StoreDriverMissingError(packageName, (error as Error).message);
        throw error;
      },
    );
    return driver;
  };
}

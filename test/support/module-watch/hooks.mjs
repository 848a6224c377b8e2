// Module-resolution hooks for watchModules (../loaded-modules.ts); they run on Node's hooks thread.
import { appendFileSync } from 'node:fs';

const log = process.env.MODULE_WATCH_LOG;
const denied = new Set((process.env.MODULE_WATCH_DENY ?? '').split(',').filter(Boolean));

/** The package a bare specifier names (`@scope/name/sub` -> `@scope/name`); undefined for paths and URLs. */
function packageOf(specifier) {
  if (/^(\.|\/|[a-z]+:)/.test(specifier)) return undefined;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

export async function resolve(specifier, context, nextResolve) {
  const name = packageOf(specifier);
  if (name !== undefined && denied.has(name)) {
    // What Node itself throws for a package that is not installed.
    const error = new Error(`Cannot find package '${name}' imported from ${context.parentURL}`);
    error.code = 'ERR_MODULE_NOT_FOUND';
    throw error;
  }
  const resolved = await nextResolve(specifier, context);
  if (log !== undefined) appendFileSync(log, `${resolved.url}\n`);
  return resolved;
}

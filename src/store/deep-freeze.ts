/** Freezes a parsed value all the way down, so a reader cannot mutate what another reader sees. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    // for…in rather than Object.values: no array per object (records are read and frozen on every get).
    for (const key in value) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
}

/** Deeper than this, a value is copied the JSON way instead (which also refuses a cycle as it always did). */
const PLAIN_DEPTH = 256;

/**
 * Freezes `value` in place and answers true when it is plain JSON data: what `JSON.parse(JSON.stringify(value))`
 * gives back equal to it (nulls, booleans, finite numbers but -0, strings, arrays without holes, objects of the
 * Object prototype or none, no undefined, function, symbol or bigint inside). Then it can be stored as it is,
 * with no copy. False: some of it was not plain (parts already walked may be frozen): copy it the JSON way.
 */
export function freezeIfPlain(value: unknown, depth = 0): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value) && !Object.is(value, -0);
    case 'object':
      break;
    default:
      return false;
  }
  if (value === null) return true;
  if (depth >= PLAIN_DEPTH) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!(i in value) || !freezeIfPlain(value[i], depth + 1)) return false;
  } else {
    const prototype = Object.getPrototypeOf(value) as unknown;
    if (prototype !== Object.prototype && prototype !== null) return false;
    for (const key in value) if (!freezeIfPlain((value as Record<string, unknown>)[key], depth + 1)) return false;
  }
  // A record's unchanged parts (met again with every put of it) are walked again rather than remembered: a
  // WeakSet of every object frozen here cost far more per put (its adds, and the collector's work on it) than
  // the walk, which only reads. Frozen by someone else is no proof of plain data, so the walk cannot stop there.
  if (!Object.isFrozen(value)) Object.freeze(value);
  return true;
}

/** Freezes a parsed value all the way down, so a reader cannot mutate what another reader sees. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    // for…in rather than Object.values: no array per object (records are read and frozen on every get).
    for (const key in value) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
}

import type { StoreReader } from '../../src/store/store.js';

/** `reader` (or a transaction), with `seen` told of every get and list before it runs. */
export function watched<R extends StoreReader>(
  reader: R,
  seen: (method: 'get' | 'list', kind: string, id: unknown) => void,
): R {
  return new Proxy(reader, {
    get(target, property) {
      const value = Reflect.get(target, property) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (property === 'get' || property === 'list') seen(property, args[0] as string, args[1]);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

import { realpathSync, statSync } from 'node:fs';
import { isAbsolute, join, sep } from 'node:path';

/**
 * The real path of `path` as the kernel would walk it: `..` after a symlink climbs from the link's target,
 * not lexically. A path whose tail does not exist yet resolves its longest existing prefix and appends the
 * rest (no symlink can hide in components that do not exist; the launch checks again once they do, and a
 * component it cannot read makes the launch's chdir fail rather than escape).
 */
function realPath(path: string): string {
  try {
    return realpathSync.native(path);
  } catch {
    // missing or unreadable: resolve the prefix that exists
  }
  const parts = path.split('/');
  for (let keep = parts.length - 1; keep > 0; keep -= 1) {
    try {
      return join(realpathSync.native(parts.slice(0, keep).join('/') || '/'), ...parts.slice(keep));
    } catch {
      // a shorter prefix next
    }
  }
  return join('/', ...parts);
}

/** Where a cwd lands: its real path and whether that lies within a root. */
export interface CwdLocation {
  requested: string | undefined;
  path: string;
  inside: boolean;
}

/**
 * The folders a session may run in. Every root and every cwd is compared by real path, so neither `../..` nor
 * a symlink leads out. A relative cwd resolves against `base` (default: the first root), and a definition
 * without a cwd runs in `base`, which must itself be inside a root.
 *
 * @example
 * ```ts
 * const roots = new CwdRoots(['/srv/work']);
 * roots.locate('notes').inside; // true: /srv/work/notes
 * roots.locate('../../etc').inside; // false
 * ```
 */
export class CwdRoots {
  readonly roots: readonly string[];
  readonly base: string;

  constructor(roots: readonly string[], base?: string) {
    if (roots.length === 0) throw new Error('cwd roots: at least one root is needed');
    this.roots = roots.map((root) => {
      if (!isAbsolute(root)) throw new Error(`cwd root ${root} is not an absolute path`);
      let real: string;
      try {
        real = realpathSync.native(root);
      } catch (error) {
        throw new Error(`cwd root ${root} cannot be used: ${(error as Error).message}`, { cause: error });
      }
      if (!statSync(real).isDirectory()) throw new Error(`cwd root ${root} is not a directory`);
      return real;
    });
    this.base = base === undefined ? this.roots[0]! : realPath(base);
    if (!this.contains(this.base))
      throw new Error(`default cwd ${base} lies outside the cwd roots ${this.roots.join(', ')}`);
  }

  private contains(real: string): boolean {
    return this.roots.some((root) => real === root || real.startsWith(root.endsWith(sep) ? root : root + sep));
  }

  locate(cwd: string | undefined): CwdLocation {
    const path = cwd === undefined ? this.base : realPath(isAbsolute(cwd) ? cwd : `${this.base}/${cwd}`);
    return { requested: cwd, path, inside: this.contains(path) };
  }

  /** The operator-facing reason a location is refused. */
  refusal(location: CwdLocation): string {
    return (
      `action.cwd ${JSON.stringify(location.requested)} resolves to ${location.path}, ` +
      `outside every cwd root (${this.roots.join(', ')})`
    );
  }
}

import { closeSync, constants, existsSync, openSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, join, sep } from 'node:path';

/** Where a path leads as the kernel walks it, or why the kernel could not walk it. */
interface Walked {
  path: string;
  unwalkable?: string;
}

/**
 * The real path of `path` as the kernel would walk it: `..` after a symlink climbs from the link's target,
 * not lexically. A path whose tail does not exist yet resolves its longest existing prefix and appends the
 * rest, which is exact only while that rest is plain names: no symlink can hide in components that do not
 * exist, but `..` after a missing component cannot be walked at all (the kernel fails there; appending it
 * lexically would cancel the missing name and land wherever the components before it lead), so such a path
 * is unwalkable. A component it cannot read makes the launch's chdir fail rather than escape.
 */
function walk(path: string): Walked {
  try {
    return { path: realpathSync.native(path) };
  } catch {
    // missing or unreadable: resolve the prefix that exists
  }
  const parts = path.split('/');
  for (let keep = parts.length - 1; keep > 0; keep -= 1) {
    let prefix: string;
    try {
      prefix = realpathSync.native(parts.slice(0, keep).join('/') || '/');
    } catch {
      continue; // a shorter prefix next
    }
    const rest = parts.slice(keep);
    if (!rest.includes('..')) return { path: join(prefix, ...rest) };
    const stuck = rest[0] === '..' ? prefix : join(prefix, rest[0]!);
    return {
      path: `${prefix}/${rest.join('/')}`,
      unwalkable: `its ".." comes after ${stuck}, which does not exist or is not a folder, so it cannot be walked`,
    };
  }
  return { path, unwalkable: 'no part of it resolves' };
}

/** Where a cwd lands: its real path and whether that lies within a root. */
export interface CwdLocation {
  requested: string | undefined;
  path: string;
  inside: boolean;
  /** Set when the path cannot be walked at all (then `inside` is false whatever `path` says). */
  unwalkable?: string;
}

/** Whether this system names a process's open files under /proc/self/fd (Linux). */
const PROC_FD = existsSync('/proc/self/fd');
const DIRECTORY_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY;

/** Thrown when a launch's working directory cannot be pinned inside the roots; nothing was started. */
export class CwdRefusedError extends Error {
  /** Errno-style, as the launch reads a spawn's own failures: nothing ran. */
  readonly code = 'ECWDREFUSED';
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
    this.base = base === undefined ? this.roots[0]! : walk(base).path;
    if (!this.contains(this.base))
      throw new Error(`default cwd ${base} lies outside the cwd roots ${this.roots.join(', ')}`);
  }

  private contains(real: string): boolean {
    return this.roots.some((root) => real === root || real.startsWith(root.endsWith(sep) ? root : root + sep));
  }

  locate(cwd: string | undefined): CwdLocation {
    if (cwd === undefined) return { requested: cwd, path: this.base, inside: true };
    const walked = walk(isAbsolute(cwd) ? cwd : `${this.base}/${cwd}`);
    return {
      requested: cwd,
      path: walked.path,
      inside: walked.unwalkable === undefined && this.contains(walked.path),
      ...(walked.unwalkable === undefined ? {} : { unwalkable: walked.unwalkable }),
    };
  }

  /** Why a location is refused, in a few words (a validation problem's text). */
  problem(location: CwdLocation): string {
    return location.unwalkable ?? `resolves to ${location.path}, outside the cwd roots`;
  }

  /** The operator-facing reason a location is refused. */
  refusal(location: CwdLocation): string {
    const requested = `action.cwd ${JSON.stringify(location.requested)}`;
    return location.unwalkable === undefined
      ? `${requested} resolves to ${location.path}, outside every cwd root (${this.roots.join(', ')})`
      : `${requested} cannot be confined to the cwd roots (${this.roots.join(', ')}): ${location.unwalkable}`;
  }

  /**
   * Runs `use` with a name of the folder `location` found that no later change to the path can redirect: the
   * folder is opened, the opened folder's own path (as the kernel reports it) is checked against the roots,
   * and `use` gets `/proc/self/fd/<n>`, which a child's chdir resolves to that very folder (fork keeps the
   * descriptor until exec). The folder stays open until `use`'s promise settles (a spawn on the launch thread).
   * So a symlink swapped into the path between the check and the chdir is refused, never followed. Without /proc,
   * the checked real path is all there is. Rejects with {@link CwdRefusedError}, or the open's own error, before
   * `use` runs.
   *
   * @example
   * ```ts
   * const location = roots.locate('work');
   * const stdio = ['ignore', 'ignore', 'ignore', 'pipe'] as const;
   * await roots.pinned(location, (cwd) => started(launchThread.spawn({ file: 'pwd', args: [], cwd, stdio })));
   * ```
   */
  async pinned<T>(location: CwdLocation, use: (cwd: string) => Promise<T>): Promise<T> {
    const fd = this.pin(location);
    try {
      return await use(fd === undefined ? location.path : `/proc/self/fd/${fd}`);
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }

  /** Opens the checked folder and re-checks what was opened; undefined where /proc/self/fd cannot name it. */
  private pin(location: CwdLocation): number | undefined {
    if (!location.inside) throw new CwdRefusedError(this.refusal(location));
    if (!PROC_FD) return undefined;
    const fd = openSync(location.path, DIRECTORY_FLAGS);
    try {
      const opened = readlinkSync(`/proc/self/fd/${fd}`);
      if (!this.contains(opened))
        throw new CwdRefusedError(
          `action.cwd ${JSON.stringify(location.requested)} was checked at ${location.path}, but that now leads ` +
            `to ${opened}, outside the cwd roots (${this.roots.join(', ')})`,
        );
      return fd;
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }
}

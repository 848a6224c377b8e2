import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../contract/digest.js';
import { mkdir, open, realpath, rename, rm } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { checkOutputTarget } from '../contract/capabilities.js';

/** What a committed delivery proves: the SHA-256 (lowercase hex) of the bytes now at the target. */
export interface DeliveryCommit {
  digest: string;
}

/**
 * The port an engine delivers a run's output through (the `outputTarget.atomic` capability). `commit` either
 * replaces the target whole with `content` and resolves, or rejects; a rejection means the delivery did not
 * commit, and the run settles failed whatever the target holds.
 *
 * @example
 * ```ts
 * const delivery = new AtomicFileDelivery('/srv/coven/out');
 * const { digest } = await delivery.commit('reports/daily.md', '# Daily\n');
 * ```
 */
export interface OutputDelivery {
  commit(target: string, content: string): Promise<DeliveryCommit>;
}

const inside = (root: string, path: string): boolean => {
  const rel = relative(root, path);
  // `..` as a whole first segment climbs out; a name that only starts with two dots (`..drafts`) does not.
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
};

/** Seams of {@link AtomicFileDelivery} for fault injection: a hook that throws fails the commit at that point. */
export interface AtomicFileDeliveryHooks {
  /** Runs after the spool file is written and synced, just before it is renamed over the target. */
  beforeRename?: (spool: string, target: string) => Promise<void>;
}

/**
 * Atomic delivery to files under one root folder: the content is written to a spool file beside the target,
 * synced, renamed over the target, and the folder is synced, so a reader (or a crash) sees the old file or the
 * new one, never a part. Targets are relative to the root; one that is home-relative, absolute, climbs out with
 * `..`, or reaches out through a symbolic link is refused before anything is written.
 *
 * @example
 * ```ts
 * const engine = createEngine({ store, delivery: new AtomicFileDelivery(join(dataDir, 'deliveries')) });
 * ```
 */
export class AtomicFileDelivery implements OutputDelivery {
  readonly root: string;

  constructor(
    root: string,
    private readonly hooks: AtomicFileDeliveryHooks = {},
  ) {
    this.root = resolve(root);
  }

  async commit(target: string, content: string): Promise<DeliveryCommit> {
    const path = await this.resolveTarget(target);
    const folder = dirname(path);
    const spool = join(folder, `.${basename(path)}.${randomBytes(6).toString('hex')}.spool`);
    try {
      const file = await open(spool, 'wx', 0o644);
      try {
        await file.writeFile(content, 'utf8');
        await file.sync();
      } finally {
        await file.close();
      }
      await this.hooks.beforeRename?.(spool, path);
      await rename(spool, path);
    } catch (error) {
      await rm(spool, { force: true });
      throw error;
    }
    await syncFolder(folder);
    return { digest: sha256Hex(content) };
  }

  /** The target's absolute path, its folder created under the root and proven (after links) to stay inside it. */
  async resolveTarget(target: string): Promise<string> {
    checkOutputTarget(target, 'outputTarget');
    const path = resolve(this.root, target);
    if (!inside(this.root, path) || path === this.root)
      throw new Error(`delivery target ${target} is outside the delivery root`);
    await mkdir(this.root, { recursive: true });
    const root = await realpath(this.root);
    // One folder at a time, each proven inside the root before the next is made under it: a link met on the
    // way is refused before anything is created where it leads.
    let folder = root;
    for (const name of relative(this.root, dirname(path))
      .split(sep)
      .filter((s) => s !== '')) {
      await mkdir(join(folder, name)).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST') throw error;
      });
      folder = await realpath(join(folder, name));
      if (!inside(root, folder)) throw new Error(`delivery target ${target} reaches outside the delivery root`);
    }
    return join(folder, basename(path));
  }
}

/** Makes a rename in `folder` durable (POSIX: fsync the directory). */
async function syncFolder(folder: string): Promise<void> {
  const handle = await open(folder, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

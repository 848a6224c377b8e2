import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../contract/digest.js';
import { constants } from 'node:fs';
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
 * Options of {@link AtomicFileDelivery}. A run's output is as private as the session that made it, so by default
 * a delivered file is 0600 and a folder the delivery creates 0700 (whatever the umask). Widening them is the
 * operator's explicit choice (e.g. `fileMode: 0o644, folderMode: 0o755` for files a web server publishes).
 *
 * @example
 * ```ts
 * new AtomicFileDelivery('/srv/coven/out', { fileMode: 0o640, folderMode: 0o750 }); // the group may read
 * ```
 */
export interface AtomicFileDeliveryOptions extends AtomicFileDeliveryHooks {
  /** The mode of every delivered file, set exactly. Default 0600; must keep 0600 and may not add other-write. */
  fileMode?: number;
  /** The mode of every folder the delivery creates (folders that exist keep theirs). Default 0700; must keep 0700. */
  folderMode?: number;
}

export const DEFAULT_DELIVERY_FILE_MODE = 0o600;
export const DEFAULT_DELIVERY_FOLDER_MODE = 0o700;

/**
 * Throws unless `mode` is a permission mode (no setuid, setgid or sticky bit) that keeps the owner's `required`
 * bits and lets no other user write.
 */
export function checkDeliveryMode(mode: number, required: number, what: string): number {
  const shown = `0${mode.toString(8)}`;
  if (!Number.isInteger(mode) || mode < 0 || mode > 0o777)
    throw new Error(`${what} ${shown}: not a permission mode (0000-0777)`);
  if ((mode & required) !== required)
    throw new Error(`${what} ${shown}: the owner needs 0${required.toString(8)} to deliver`);
  if ((mode & 0o002) !== 0) throw new Error(`${what} ${shown}: no delivery is writable by every user`);
  return mode;
}

/**
 * Atomic delivery to files under one root folder: the content is written to a spool file beside the target,
 * synced, renamed over the target, and the folder is synced, so a reader (or a crash) sees the old file or the
 * new one, never a part. Targets are relative to the root; one that is home-relative, absolute, climbs out with
 * `..`, or reaches out through a symbolic link is refused before anything is written. Delivered files are 0600
 * and the folders it creates 0700 unless {@link AtomicFileDeliveryOptions} widens them.
 *
 * @example
 * ```ts
 * const engine = createEngine({ store, delivery: new AtomicFileDelivery(join(dataDir, 'deliveries')) });
 * ```
 */
export class AtomicFileDelivery implements OutputDelivery {
  readonly root: string;
  readonly fileMode: number;
  readonly folderMode: number;

  constructor(
    root: string,
    private readonly options: AtomicFileDeliveryOptions = {},
  ) {
    this.root = resolve(root);
    this.fileMode = checkDeliveryMode(options.fileMode ?? DEFAULT_DELIVERY_FILE_MODE, 0o600, 'delivery file mode');
    this.folderMode = checkDeliveryMode(
      options.folderMode ?? DEFAULT_DELIVERY_FOLDER_MODE,
      0o700,
      'delivery folder mode',
    );
  }

  async commit(target: string, content: string): Promise<DeliveryCommit> {
    const path = await this.resolveTarget(target);
    const folder = dirname(path);
    const spool = join(folder, `.${basename(path)}.${randomBytes(6).toString('hex')}.spool`);
    try {
      const file = await open(spool, 'wx', 0o600);
      try {
        // Set exactly: the umask can only take bits away from the mode given to open.
        await file.chmod(this.fileMode);
        await file.writeFile(content, 'utf8');
        await file.sync();
      } finally {
        await file.close();
      }
      await this.options.beforeRename?.(spool, path);
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
    await this.makeFolders(this.root);
    const root = await realpath(this.root);
    // One folder at a time, each proven inside the root before the next is made under it: a link met on the
    // way is refused before anything is created where it leads.
    let folder = root;
    for (const name of relative(this.root, dirname(path))
      .split(sep)
      .filter((s) => s !== '')) {
      await this.makeFolder(join(folder, name));
      folder = await realpath(join(folder, name));
      if (!inside(root, folder)) throw new Error(`delivery target ${target} reaches outside the delivery root`);
    }
    return join(folder, basename(path));
  }

  /** Makes the one folder `path` in the mode folders get, unless something is there already (it keeps its mode). */
  private async makeFolder(path: string): Promise<void> {
    try {
      await mkdir(path, { mode: 0o700 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return;
      throw error;
    }
    await this.setFolderMode(path);
  }

  /** Sets a folder just made to the folder mode, through a descriptor (a link put in its place is not followed). */
  private async setFolderMode(path: string): Promise<void> {
    const handle = await open(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    try {
      await handle.chmod(this.folderMode);
    } finally {
      await handle.close();
    }
  }

  /** Makes `path` and the parents it lacks, each set to the folder mode; folders that exist keep theirs. */
  private async makeFolders(path: string): Promise<void> {
    const first = await mkdir(path, { recursive: true, mode: 0o700 });
    if (first === undefined) return;
    for (let made = path; ; made = dirname(made)) {
      await this.setFolderMode(made);
      if (made === first || dirname(made) === made) return;
    }
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

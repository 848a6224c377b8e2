import { hostname } from 'node:os';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import lockfile from 'proper-lockfile';
import { StoreLockedError } from './store.js';

interface LockOwner {
  pid: number;
  hostname: string;
  acquiredAt: string;
}

/** proper-lockfile refreshes the lock's mtime at half this period; a lock untouched this long is stale. */
const STALE_AFTER_MS = 10_000;

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readOwner(path: string): LockOwner | undefined {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as LockOwner;
  } catch {
    return undefined;
  }
}

function describeOwner(owner: LockOwner | undefined): string {
  return owner === undefined ? 'another process (owner unknown)' : `process ${owner.pid} on ${owner.hostname} since ${owner.acquiredAt}`;
}

export interface HeldLock {
  release(): Promise<void>;
  /** Set when the lock was lost (its directory was removed or went stale under us). */
  compromised(): Error | undefined;
}

/**
 * Takes the single-writer lock of a store file. A lock left by a dead process on this host is taken
 * over at once (a SIGKILLed engine must be restartable without waiting); a live holder is named in the
 * error.
 */
export async function acquireStoreLock(file: string): Promise<HeldLock> {
  const ownerPath = `${file}.owner`;
  let lost: Error | undefined;
  const attempt = () =>
    lockfile.lock(file, {
      realpath: false,
      stale: STALE_AFTER_MS,
      retries: 0,
      onCompromised: (error) => {
        lost = error;
      },
    });
  let release: () => Promise<void>;
  try {
    release = await attempt();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ELOCKED') throw error;
    const owner = readOwner(ownerPath);
    const deadHolder = owner !== undefined && owner.hostname === hostname() && owner.pid !== process.pid && !isAlive(owner.pid);
    if (!deadHolder) throw new StoreLockedError(file, describeOwner(owner));
    rmSync(`${file}.lock`, { recursive: true, force: true });
    try {
      release = await attempt();
    } catch (retryError) {
      if ((retryError as NodeJS.ErrnoException).code === 'ELOCKED') throw new StoreLockedError(file, describeOwner(readOwner(ownerPath)));
      throw retryError;
    }
  }
  const owner: LockOwner = { pid: process.pid, hostname: hostname(), acquiredAt: new Date().toISOString() };
  writeFileSync(ownerPath, `${JSON.stringify(owner)}\n`);
  return {
    async release() {
      rmSync(ownerPath, { force: true });
      await release();
    },
    compromised: () => lost,
  };
}

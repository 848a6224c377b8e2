import { accessSync, chmodSync, constants, mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { StoreReadOnlyError } from './store.js';

/**
 * Store files hold prompts and runtime output: readable by their owner only. A umask can only take bits
 * away from a mode given at creation, so every file and folder a store creates is also set to its mode
 * explicitly (chmod/fchmod) once created.
 */
export const PRIVATE_FILE_MODE = 0o600;
export const PRIVATE_FOLDER_MODE = 0o700;

/**
 * Creates `dir` and the parents it lacks, each 0700 whatever the umask; folders that already exist keep
 * their mode (they are the operator's).
 */
export function makePrivateFolder(dir: string): void {
  const first = mkdirSync(dir, { recursive: true, mode: PRIVATE_FOLDER_MODE });
  if (first === undefined) return;
  for (let created = dir; ; created = dirname(created)) {
    chmodSync(created, PRIVATE_FOLDER_MODE);
    if (created === first || dirname(created) === created) return;
  }
}

/**
 * Refuses a store file the operator made read-only (its mode has no write bit for its owner — checked by
 * mode, so root, whom no permission stops, is held to it too) or this process cannot write: a store opened on
 * it would replace it at its next fold, or fail its first commit. A file that does not exist passes.
 */
export function refuseReadOnly(file: string): void {
  let mode: number;
  try {
    mode = statSync(file).mode;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  if ((mode & 0o200) === 0)
    throw new StoreReadOnlyError(
      file,
      `its mode is 0${(mode & 0o777).toString(8)}, without write permission for its owner`,
    );
  try {
    accessSync(file, constants.W_OK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS')
      throw new StoreReadOnlyError(file, `${code}: this process may not write it`);
    throw error;
  }
}

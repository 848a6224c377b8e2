import { statSync } from 'node:fs';
import type { CwdLocation, CwdRoots } from './cwd-roots.js';
import type { LaunchResult } from './runtime.js';

/** A launch proven not to have run anything, for a reason that will not change by retrying. */
export const refused = (detail: string): LaunchResult => ({
  outcome: 'failed',
  failureClass: 'launch_refused',
  detail,
});

/**
 * What a launch answers when making its session failed with an errno-coded error before anything ran (a file that
 * could not be made, a spawn that failed, a cwd that could not be pinned): resource limits are transient, the rest
 * deterministic. An error without a code says nothing of what ran, so it is thrown on (an unknown outcome).
 */
export function spawnFailure(error: unknown): LaunchResult {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === undefined) throw error;
  return {
    outcome: 'failed',
    failureClass: code === 'EAGAIN' || code === 'EMFILE' || code === 'ENFILE' ? 'transient_dispatch' : 'launch_refused',
    detail: (error as Error).message,
  };
}

/**
 * The folder a launch's session would run in, or the refusal when it is outside the roots or is not a folder
 * (stat without throwing: a folder that vanishes between checks is refused, not an unknown outcome).
 */
export function workingFolder(roots: CwdRoots, cwd: string | undefined): CwdLocation | LaunchResult {
  const location = roots.locate(cwd);
  if (!location.inside) return refused(roots.refusal(location));
  if (statSync(location.path, { throwIfNoEntry: false })?.isDirectory() !== true)
    return refused(`working directory ${location.path} does not exist`);
  return location;
}

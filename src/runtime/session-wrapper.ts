import type { Readable } from 'node:stream';
import type { LaunchedProcess } from './launch-thread.js';

// Runs as `sh -c`. The start claim is an exclusive create (noclobber) of the start file holding this shell's
// pid and process start time (/proc/<pid>/stat field 22, so a reused pid is told apart); a shell that loses it
// runs nothing. Closing fd 3 tells the launching engine the claim is decided. Session files are created under
// umask 077 or pre-created 0600 by the engine, and the command gets the engine's umask back. The command runs
// in a subshell (an `exit` in it ends only the subshell), and its exit code is recorded atomically (temp +
// rename), so a reader never sees half a code.
export const WRAPPER = [
  'coven_st=; if read -r coven_stat < "/proc/$$/stat" 2>/dev/null; ' +
    'then set -- ${coven_stat##*") "}; coven_st=${20-}; fi',
  'coven_umask=${COVEN_UMASK:-$(umask)}; umask 077; set -C; coven_claimed=',
  '{ printf "started pid=%s starttime=%s\\n" "$$" "$coven_st" > "$COVEN_START_FILE"; } 2>/dev/null && coven_claimed=1',
  'set +C; umask "$coven_umask"; exec 3>&-',
  '[ -n "$coven_claimed" ] || exit 75',
  '( eval "$COVEN_COMMAND" ); code=$?',
  'printf %s "$code" > "$COVEN_EXIT_TEMP" && mv "$COVEN_EXIT_TEMP" "$COVEN_EXIT_FILE"',
].join('\n');

/**
 * Resolves once the wrapper, started (its spawn already succeeded), has closed fd 3 (its start claim is decided);
 * rejects with an error the process reports meanwhile, or with a plain error when the claim takes longer than
 * `timeoutMs` (outcome unknown).
 */
export function claimDecided(child: LaunchedProcess, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const pipe = child.stdio[3] as Readable;
    const timer = setTimeout(() => {
      pipe.destroy();
      reject(new Error(`the session wrapper did not claim its start within ${timeoutMs} ms`));
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      pipe.destroy();
      reject(error);
    });
    pipe.on('data', () => undefined);
    pipe.once('error', () => undefined);
    pipe.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** How many bytes of a failed session's output its attempt keeps: the end of it, where the error usually is. */
export const OUTPUT_TAIL_BYTES = 2048;

/** How many characters of a thrown error's message an attempt keeps. */
export const ERROR_MESSAGE_CHARS = 500;

/**
 * Why an attempt failed, as the runtime's evidence told it when the attempt settled: kept with the attempt (and
 * expired with it by retention) so every read can show it without asking the runtime again.
 */
export interface AttemptFailure {
  failureClass: string;
  exitCode: number | null;
  /** The signal the exit status names, when the runtime can tell (`SIGKILL` for 137 from a shell). */
  signal?: string;
  /** The message of the error an in-process function threw (or the runtime's own detail of the exit). */
  errorMessage?: string;
  /** The last {@link OUTPUT_TAIL_BYTES} bytes of what the session printed. */
  outputTail?: string;
  /** The session printed more than the tail holds: `logs` has the rest. */
  outputTruncated?: boolean;
}

/** A message cut to {@link ERROR_MESSAGE_CHARS} characters. */
export const boundedMessage = (text: string): string =>
  text.length <= ERROR_MESSAGE_CHARS ? text : `${text.slice(0, ERROR_MESSAGE_CHARS - 3)}...`;

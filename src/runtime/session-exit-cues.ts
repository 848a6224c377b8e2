import type { SessionExit } from './runtime.js';

/** The listeners of one runtime's `onSessionExit`, for the built-in runtimes to share. */
export class SessionExitCues {
  private readonly listeners = new Set<(exit: SessionExit) => void>();

  subscribe(listener: (exit: SessionExit) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  cue(exit: SessionExit): void {
    for (const listener of this.listeners) listener(exit);
  }
}

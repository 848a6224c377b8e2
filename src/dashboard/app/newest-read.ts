/**
 * Orders overlapping reads of one view: a refresh from the changefeed and a reader's click (a new filter, the next
 * page) can both be in flight, and the slower one must not paint over the newer one — nor move its pager.
 *
 * @example
 * ```ts
 * const reads = new NewestRead();
 * async function render() {
 *   const stillNewest = reads.begin();
 *   const page = await readPage(...);
 *   if (!stillNewest()) return; // a later read was started: it paints
 *   fill(target, ...);
 * }
 * ```
 */
export class NewestRead {
  private started = 0;

  /** Starts a read; the function answers whether no later read has been started since. */
  begin(): () => boolean {
    const mine = ++this.started;
    return () => mine === this.started;
  }
}

const byTarget = new WeakMap<HTMLElement, NewestRead>();

/** The read order of whatever renders into `target` (for views written as functions). */
export function newestReadOf(target: HTMLElement): NewestRead {
  let reads = byTarget.get(target);
  if (reads === undefined) byTarget.set(target, (reads = new NewestRead()));
  return reads;
}

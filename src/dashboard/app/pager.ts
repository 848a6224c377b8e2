import { el } from './dom.js';

/** A page of a cursor-paged read: its rows, how many matched in all, and the cursor of the next page. */
export interface Page<T> {
  rows: T[];
  matched?: number;
  next?: string;
}

/**
 * Walks a cursor-paged read one page at a time: it keeps the cursors of the pages already passed (so "previous"
 * re-reads one page rather than everything before it), never more than one page of rows.
 *
 * @example
 * ```ts
 * const pager = new CursorPager('runs', () => void render());
 * const page = await readRuns(pager.cursor);
 * pager.seen(page.next);
 * target.append(pager.controls(page.rows.length, page.matched));
 * ```
 */
export class CursorPager {
  /** The cursor each earlier page was read with (undefined: the first page). */
  private readonly behind: Array<string | undefined> = [];
  private current: string | undefined;
  private ahead: string | undefined;

  constructor(
    private readonly name: string,
    private readonly changed: () => void,
  ) {}

  /** The cursor of the page to read now (undefined: the first). */
  get cursor(): string | undefined {
    return this.current;
  }

  /** The page number shown, from 1. */
  get number(): number {
    return this.behind.length + 1;
  }

  /** Records the next page's cursor, as the read just answered it. */
  seen(next: string | undefined): void {
    this.ahead = next;
  }

  /** Back to the first page (a new filter). */
  reset(): void {
    this.behind.length = 0;
    this.current = undefined;
    this.ahead = undefined;
  }

  /** "page 2 · 25 of 3120 · previous · next" */
  controls(shown: number, matched: number | undefined): HTMLElement {
    const previous = this.behind.length > 0;
    return el(
      'div',
      { class: 'pager', 'data-testid': `${this.name}-pager`, 'data-page': String(this.number) },
      el(
        'span',
        { class: 'muted' },
        `page ${this.number} · ${shown} shown${matched === undefined ? '' : ` of ${matched} matching`} `,
      ),
      el(
        'button',
        {
          'data-testid': `${this.name}-previous`,
          disabled: !previous,
          onclick: () => {
            this.current = this.behind.pop();
            this.changed();
          },
        },
        '‹ previous',
      ),
      el(
        'button',
        {
          'data-testid': `${this.name}-next`,
          disabled: this.ahead === undefined,
          onclick: () => {
            if (this.ahead === undefined) return;
            this.behind.push(this.current);
            this.current = this.ahead;
            this.changed();
          },
        },
        'next ›',
      ),
    );
  }
}

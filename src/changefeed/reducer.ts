import { ContractError } from '../contract/errors.js';
import type { EventEnvelope, StreamRef } from './event-envelope.js';
import { storeStream } from './event-envelope.js';

/**
 * A client-side fold of one stream. Delivery is at-least-once: a redelivered event id is ignored; an
 * event that is not exactly cursor+1 is refused with STREAM_OUT_OF_ORDER (never reordered or re-applied);
 * a `feed.snapshot` replaces the state when it is ahead of the cursor.
 *
 * @example
 * ```ts
 * const reducer = new StreamReducer(stream, (state, event) => ({ ...state, state: event.payload.to }), {});
 * for (const event of delivered) reducer.apply(event);
 * ```
 */
export class StreamReducer<TState> {
  private readonly seen = new Set<string>();
  private cursorValue: number;
  private current: TState;

  constructor(
    readonly stream: StreamRef,
    private readonly fold: (state: TState, event: EventEnvelope) => TState,
    initial: TState,
    cursor = -1,
  ) {
    this.current = initial;
    this.cursorValue = cursor;
  }

  get state(): TState {
    return this.current;
  }

  /** The last applied sequence; -1 before any. */
  get cursor(): number {
    return this.cursorValue;
  }

  /** Applies one delivery; returns false when it was a duplicate and changed nothing. */
  apply(event: EventEnvelope): boolean {
    if (storeStream(event.stream) !== storeStream(this.stream)) {
      throw new ContractError(
        'VALIDATION_FAILED',
        `event of stream ${storeStream(event.stream)} delivered to a reducer of ${storeStream(this.stream)}`,
      );
    }
    if (this.seen.has(event.eventId)) return false;
    if (event.kind === 'feed.snapshot') {
      const through = event.payload.throughSequence as number;
      if (event.sequence !== through || through <= this.cursorValue) {
        throw new ContractError(
          'STREAM_OUT_OF_ORDER',
          `snapshot through ${through} cannot follow cursor ${this.cursorValue}`,
          { cursor: this.cursorValue, sequence: event.sequence },
        );
      }
      this.current = event.payload.state as TState;
    } else {
      if (event.sequence !== this.cursorValue + 1) {
        throw new ContractError(
          'STREAM_OUT_OF_ORDER',
          `sequence ${event.sequence} does not follow cursor ${this.cursorValue}`,
          {
            cursor: this.cursorValue,
            sequence: event.sequence,
            eventId: event.eventId,
          },
        );
      }
      this.current = this.fold(this.current, event);
    }
    this.seen.add(event.eventId);
    this.cursorValue = event.sequence;
    return true;
  }
}

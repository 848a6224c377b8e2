import { sha256Hex } from '../contract/digest.js';

/**
 * An occurrence's trace: W3C trace context ids derived from its id, so every engine that plans, claims, launches or
 * settles it — and every runtime it runs on — names the same trace without storing or passing anything.
 */
export const traceIdOf = (occurrenceId: string): string => sha256Hex(`trace:${occurrenceId}`).slice(0, 32);

/** The id of the span every phase of the occurrence hangs under (the trace's parent; no engine exports it). */
export const occurrenceSpanIdOf = (occurrenceId: string): string => sha256Hex(`span:${occurrenceId}`).slice(0, 16);

/**
 * The W3C `traceparent` a runtime passes to what it runs (`TRACEPARENT` for a child process): version 00, the
 * occurrence's trace, its span, sampled.
 *
 * @example
 * ```ts
 * traceparentOf('daily-1772614800000'); // '00-<32 hex>-<16 hex>-01'
 * ```
 */
export const traceparentOf = (occurrenceId: string): string =>
  `00-${traceIdOf(occurrenceId)}-${occurrenceSpanIdOf(occurrenceId)}-01`;

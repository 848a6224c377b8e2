import { ContractError } from '../contract/errors.js';
import { requireValidExtension } from '../contract/schemas.js';

/** The definition extension that says what a slot does while its automation is busy (docs/schedules.md). */
export const OVERLAP_EXTENSION = 'x-coven-automata.overlap.v1';

/** The body of {@link OVERLAP_EXTENSION}, as overlap-extension.schema.json admits it. */
export interface OverlapExtension {
  policy: 'forbid' | 'buffer-one' | 'cancel-other' | 'allow';
  catchUp?: { windowMinutes: number; order: 'oldest-first' | 'latest-only' };
}

/** Policies the schema names that this build does not execute, and why (none: every policy runs). */
const NOT_EXECUTED: Partial<Record<OverlapExtension['policy'], string>> = {};

/** The definition's {@link OVERLAP_EXTENSION} body, when it has one (checked when the definition was). */
export const overlapOf = (terms: { extensions?: Record<string, unknown> }): OverlapExtension | undefined =>
  terms.extensions?.[OVERLAP_EXTENSION] as OverlapExtension | undefined;

/** Validates the extension's body: its schema, then the policies this build executes. */
export function checkOverlapExtension(raw: unknown): void {
  requireValidExtension('overlap-extension.schema.json', OVERLAP_EXTENSION, raw);
  const { policy, catchUp } = raw as OverlapExtension;
  if (policy === 'cancel-other' && catchUp !== undefined)
    throw new ContractError('CAPABILITY_UNSUPPORTED', 'cancel-other with a catch-up window is not supported', {
      contractProfile: OVERLAP_EXTENSION,
      variant: 'overlap.cancel-other.catchUp',
      reason: 'a catch-up window runs missed slots after the live run; cancel-other replaces the live run',
    });
  const reason = NOT_EXECUTED[policy];
  if (reason !== undefined)
    throw new ContractError('CAPABILITY_UNSUPPORTED', `overlap policy ${policy} is not supported: ${reason}`, {
      contractProfile: OVERLAP_EXTENSION,
      variant: `overlap.${policy}`,
      reason,
    });
}

/**
 * Whether due slots wait while the automation is busy (any occurrence not yet terminal) instead of being planned
 * and skipped: `buffer-one` (the latest waits) and any catch-up window (missed slots run when it is free).
 */
export const waitsWhileBusy = (overlap: OverlapExtension | undefined): boolean =>
  overlap !== undefined &&
  (overlap.policy === 'buffer-one' || (overlap.catchUp !== undefined && overlap.policy !== 'allow'));

/**
 * `allow`: a slot is claimed whatever the automation has live, so its runs go side by side. Each occurrence says
 * so itself ({@link OccurrenceOverlap}), which is what the stores' one-live rule exempts.
 */
export const allowsOverlap = (terms: { extensions?: Record<string, unknown> }): boolean =>
  overlapOf(terms)?.policy === 'allow';

/** What an occurrence of an `allow` definition carries (OccurrenceAttributes.overlap), pinned when it is planned. */
export type OccurrenceOverlap = 'allow';

/** Which of an automation's due slots planning plans now, and which it passes over (recorded, never run). */
export interface SlotChoice {
  /** The slot to plan now; none when every due slot is beyond the catch-up window. */
  plan: Date | undefined;
  /** Due slots older than the one planned that will not run: collapsed into it, or beyond the window. */
  passedOver: Date[];
}

/**
 * Chooses among due slots (oldest first, at least one): the latest, the rest collapsed (the contract's misfire
 * `latest`, and `buffer-one`); with a catch-up window, slots older than the window are passed over and of the rest
 * the oldest is planned (`oldest-first`: the others stay due for the passes after it) or the latest
 * (`latest-only`).
 *
 * @example
 * ```ts
 * const due = ['08:00', '08:15', '08:30'].map((t) => new Date(`2026-12-07T${t}:00Z`));
 * const overlap = { policy: 'forbid', catchUp: { windowMinutes: 30, order: 'oldest-first' } } as const;
 * chooseDueSlot(due, Date.parse('2026-12-07T08:35:00Z'), overlap);
 * // { plan: 08:15, passedOver: [08:00] }
 * ```
 */
export function chooseDueSlot(slots: readonly Date[], now: number, overlap: OverlapExtension | undefined): SlotChoice {
  const catchUp = overlap?.catchUp;
  if (catchUp === undefined) return { plan: slots.at(-1), passedOver: slots.slice(0, -1) };
  const oldestRun = now - catchUp.windowMinutes * 60_000;
  const beyond = slots.filter((slot) => slot.getTime() < oldestRun);
  const within = slots.slice(beyond.length);
  if (catchUp.order === 'oldest-first') return { plan: within[0], passedOver: beyond };
  return { plan: within.at(-1), passedOver: [...beyond, ...within.slice(0, -1)] };
}

import { instant, isBefore } from './common.js';

/** How long a committed cancellation owns the stop of its run's session (the contract's cancellation lease). */
export const CANCELLATION_STOP_LEASE_MS = 30_000;

/**
 * A cancellation committed at or before the run's deadline took the stop first: until its stop lease ends, the
 * timeout does not take the stop over, and the runtime's acknowledgment settles the work cancelled.
 */
export function stopOwnedByCancellation(
  deadlineAt: string | null,
  cancellationRequestedAt: string | undefined,
  now: string,
): boolean {
  if (deadlineAt === null || cancellationRequestedAt === undefined) return false;
  if (isBefore(deadlineAt, cancellationRequestedAt)) return false;
  return instant(now) < instant(cancellationRequestedAt) + CANCELLATION_STOP_LEASE_MS;
}

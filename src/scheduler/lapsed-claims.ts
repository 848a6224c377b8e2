import { OccurrenceState } from '../../machines/index.js';
import type { OccurrenceRecord } from '../domain/records.js';

/**
 * A slot's first claim whose lease lapsed before anything was adopted under it: the contract's
 * `claimed → recovering` (leaseExpiresAt < now, no runtime evidence), then failed, since nothing was launched.
 * It is not dispatched late under the lapsed fence, however soon an engine comes back.
 */
export function firstClaimLapsed(state: string, occurrence: OccurrenceRecord): boolean {
  return state === OccurrenceState.claimed && occurrence.data.attributes.activeRunRef === undefined;
}

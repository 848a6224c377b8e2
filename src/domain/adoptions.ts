/** Adoption records: one per committed command (and per attempt), keyed by its adoption key. */
export const ADOPTION_KIND = 'adoption';

/**
 * The durable record of a committed command, written in the same transaction as its effects. Keys are
 * global: any later use of the key either replays this record or conflicts with it, for as long as the record
 * is kept (retention's adoption window; see adoption-expiry.ts).
 */
export interface AdoptionRecord {
  command: string;
  requestDigest: string;
  committedAt: string;
  result: Record<string, unknown>;
  revision?: number;
  eventRef?: { stream: string; sequence: number };
  automationId?: string;
}

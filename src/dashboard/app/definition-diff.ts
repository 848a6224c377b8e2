import canonicalize from 'canonicalize';
import { sha256Hex } from './receipt.js';

/** What the store keeps beside what an author writes: revision, state, digest and audit fields (as `apply`). */
export const KEPT_BY_THE_STORE: ReadonlySet<string> = new Set([
  'revision',
  'lifecycleState',
  'integrity',
  'provenance',
  'deletion',
]);

/** The fields of a definition body its author edits. */
export function authorFields(body: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(body).filter(([key]) => !KEPT_BY_THE_STORE.has(key)));
}

/** One changed leaf: `before` absent for an added field, `after` absent for a removed one. */
export interface FieldChange {
  path: string;
  before?: string;
  after?: string;
}

/** Leaves of a JSON value by dotted path; arrays and scalars are leaves (shown as JSON). */
function leaves(value: unknown, path: string, out: Map<string, string>): Map<string, string> {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 0) out.set(path, '{}');
    for (const [key, child] of entries) leaves(child, path === '' ? key : `${path}.${key}`, out);
  } else out.set(path, JSON.stringify(value));
  return out;
}

/**
 * The field-by-field difference between two definition bodies' author fields, by dotted path in path order.
 *
 * @example
 * ```ts
 * fieldChanges({ trigger: { schedule: { rrule: 'A' } } }, { trigger: { schedule: { rrule: 'B' } } });
 * // [{ path: 'trigger.schedule.rrule', before: '"A"', after: '"B"' }]
 * ```
 */
export function fieldChanges(before: Record<string, unknown>, after: Record<string, unknown>): FieldChange[] {
  const a = leaves(authorFields(before), '', new Map());
  const b = leaves(authorFields(after), '', new Map());
  const paths = [...new Set([...a.keys(), ...b.keys()])].sort();
  return paths
    .filter((path) => a.get(path) !== b.get(path))
    .map((path) => ({
      path,
      ...(a.has(path) ? { before: a.get(path) } : {}),
      ...(b.has(path) ? { after: b.get(path) } : {}),
    }));
}

/**
 * A body ready to send: the author's fields with the revision and state the command needs, and its integrity
 * digest (SHA-256 over the RFC 8785 canonical JSON of the body without `integrity`, as the engine checks it).
 */
export async function sealedBody(
  fields: Record<string, unknown>,
  revision: number,
  lifecycleState: string,
): Promise<Record<string, unknown>> {
  const body = { ...authorFields(fields), revision, lifecycleState };
  const text = canonicalize(body);
  if (text === undefined) throw new Error('the definition cannot be canonicalised');
  return { ...body, integrity: { algorithm: 'sha256', canonicalization: 'jcs-rfc8785', value: await sha256Hex(text) } };
}

import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { ContractError } from './errors.js';

/** The contract's digest object: SHA-256 over RFC 8785 (JCS) canonical JSON. */
export interface Digest {
  algorithm: 'sha256';
  canonicalization: 'jcs-rfc8785';
  value: string;
  authentication?: 'none' | 'producer-hmac' | 'cosign';
}

function assertHashable(value: unknown, path: string): void {
  if (typeof value === 'number') {
    if (!Number.isFinite(value))
      throw new ContractError('VALIDATION_FAILED', `${path} is not a finite number`, { path });
    if (Number.isInteger(value) && !Number.isSafeInteger(value)) {
      throw new ContractError('VALIDATION_FAILED', `${path} is an integer beyond ±(2^53−1)`, { path });
    }
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => assertHashable(item, `${path}/${i}`));
  } else if (value !== null && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) assertHashable(child, `${path}/${key}`);
  } else if (typeof value === 'bigint') {
    throw new ContractError('VALIDATION_FAILED', `${path} is a BigInt`, { path });
  }
}

/**
 * RFC 8785 canonical JSON. Non-finite numbers and integers beyond ±(2^53−1) are refused before hashing,
 * because two producers could not agree on their bytes.
 */
export function canonicalJson(value: unknown): string {
  assertHashable(value, '');
  let text: string | undefined;
  try {
    text = canonicalize(value);
  } catch (error) {
    throw new ContractError('VALIDATION_FAILED', `value cannot be canonicalised: ${(error as Error).message}`);
  }
  if (text === undefined) throw new ContractError('VALIDATION_FAILED', 'value cannot be canonicalised');
  return text;
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** SHA-256 of the canonical JSON of `value` (no member removed): used for request fingerprints. */
export function jcsSha256(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

/** The digest value of a contract object: JCS SHA-256 of the object with its top-level `integrity` removed. */
export function contractDigestValue(object: Record<string, unknown>): string {
  const { integrity: _ignored, ...rest } = object;
  return jcsSha256(rest);
}

export function integrityOf(object: Record<string, unknown>, authentication?: Digest['authentication']): Digest {
  const digest: Digest = { algorithm: 'sha256', canonicalization: 'jcs-rfc8785', value: contractDigestValue(object) };
  if (authentication !== undefined) digest.authentication = authentication;
  return digest;
}

export interface IntegrityVerdict {
  valid: boolean;
  expected: string | undefined;
  actual: string;
}

/**
 * Recomputes an object's integrity digest and compares it with the one it carries.
 *
 * @example
 * ```ts
 * const { valid, expected, actual } = verifyIntegrity(receipt);
 * ```
 */
export function verifyIntegrity(object: Record<string, unknown>): IntegrityVerdict {
  const carried = (object.integrity as Partial<Digest> | undefined)?.value;
  const actual = contractDigestValue(object);
  return { valid: carried === actual, expected: carried, actual };
}

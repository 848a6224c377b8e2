import canonicalize from 'canonicalize';

/** What the browser found when it recomputed a receipt's digest. */
export interface ReceiptVerdict {
  verified: boolean;
  expected: string | undefined;
  actual: string;
}

/** Hex SHA-256 of a text's UTF-8 bytes (SubtleCrypto). */
export async function sha256Hex(text: string): Promise<string> {
  const bytes = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * Recomputes a receipt's integrity in the browser, independently of the daemon: SHA-256 over the RFC 8785
 * canonical JSON of the receipt without its `integrity` member (the contract's digest recipe, with the same
 * canonicalize library the engine uses), compared with the digest the receipt carries.
 *
 * @example
 * ```ts
 * const { verified } = await verifyReceipt(receipt); // false when any byte of the receipt changed
 * ```
 */
export async function verifyReceipt(receipt: Record<string, unknown>): Promise<ReceiptVerdict> {
  const { integrity, ...rest } = receipt;
  const text = canonicalize(rest);
  const actual = text === undefined ? '' : await sha256Hex(text);
  const expected = (integrity as { value?: unknown } | undefined)?.value;
  return { verified: typeof expected === 'string' && expected === actual, expected: expected as string, actual };
}

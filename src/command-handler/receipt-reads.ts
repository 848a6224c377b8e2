import { verifyIntegrity } from '../contract/digest.js';
import { ContractError } from '../contract/errors.js';
import { receiptIdFor } from '../domain/receipts.js';
import { KINDS, type Receipt, type RunRecord } from '../domain/records.js';
import type { StoreReader } from '../store/store.js';
import { missingEntity } from './operator-lookups.js';

/** Whether a receipt's carried JCS SHA-256 integrity digest matches the one recomputed over its body. */
export interface ReceiptVerification {
  verified: boolean;
  algorithm: 'sha256';
  canonicalization: 'jcs-rfc8785';
  /** The digest the receipt carries (absent when it carries none). */
  expected?: string;
  /** The digest recomputed over the receipt without its `integrity` member. */
  actual: string;
}

/**
 * Recomputes a stored receipt's integrity the way the `verify` command does (one function, {@link verifyIntegrity}),
 * so a receipt that was edited after it was sealed reads `verified: false`.
 */
export function verifyReceipt(receipt: Record<string, unknown>): ReceiptVerification {
  const verdict = verifyIntegrity(receipt);
  return {
    verified: verdict.valid,
    algorithm: 'sha256',
    canonicalization: 'jcs-rfc8785',
    ...(verdict.expected === undefined ? {} : { expected: verdict.expected }),
    actual: verdict.actual,
  };
}

/** A receipt named by an attempt, with its verification; undefined when the attempt has none (yet). */
export async function attemptReceipt(
  reader: StoreReader,
  attemptId: string,
): Promise<{ receipt: Receipt; verification: ReceiptVerification } | undefined> {
  const stored = await reader.get<Receipt>(KINDS.receipt, receiptIdFor(attemptId));
  if (stored === undefined) return undefined;
  return { receipt: stored.data, verification: verifyReceipt(stored.data as unknown as Record<string, unknown>) };
}

/** The receipt a run answers with: the one its settlement named, else its latest attempt's that exists. */
async function runReceiptId(reader: StoreReader, runId: string): Promise<string> {
  const run = (await reader.get<RunRecord['data']>(KINDS.run, runId)) as RunRecord | undefined;
  if (run === undefined) throw await missingEntity(reader, 'run', runId);
  if (run.data.attributes.receiptRef !== undefined) return run.data.attributes.receiptRef;
  for (const attemptId of [...run.data.attributes.attemptIds].reverse()) {
    const id = receiptIdFor(attemptId);
    if ((await reader.version(KINDS.receipt, id)) !== undefined) return id;
  }
  throw new ContractError('NOT_FOUND', `run ${runId} has no receipt yet: none of its attempts has settled`, {
    kind: 'receipt',
    runId,
  });
}

/**
 * receipt.get.v1: one committed receipt, by its id or by the run it settled, with its integrity verification.
 * Receipts are sealed on write, so this only reads; `verification.verified: false` means the stored bytes no
 * longer match the digest they were sealed with.
 *
 * @example
 * ```ts
 * const { receipt, verification } = await store.read((r) => getReceipt(r, { runId: 'run-occ-1' }));
 * if (!verification.verified) console.error(`receipt ${receipt.receiptId} does not verify`);
 * ```
 */
export async function getReceipt(
  reader: StoreReader,
  payload: { receiptId?: string; runId?: string },
): Promise<Record<string, unknown>> {
  const receiptId = payload.receiptId ?? (await runReceiptId(reader, payload.runId!));
  const stored = await reader.get<Receipt>(KINDS.receipt, receiptId);
  if (stored === undefined)
    throw new ContractError('NOT_FOUND', `no receipt with id ${receiptId}`, { kind: 'receipt', id: receiptId });
  return {
    receipt: stored.data,
    verification: verifyReceipt(stored.data as unknown as Record<string, unknown>),
  };
}

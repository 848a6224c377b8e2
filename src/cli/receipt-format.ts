import { verifyIntegrity } from '../contract/digest.js';
import type { ReceiptVerification } from '../command-handler/receipt-reads.js';

type Rendered = Record<string, unknown>;

/** The `receipt <runId>` lines: what the receipt says, and whether the engine found its digest matching. */
export function receiptLines(result: Rendered): string {
  const r = result.receipt as Rendered;
  const outcome = r.outcome as { disposition: string; failureClass?: string; detail?: string };
  const verification = result.verification as ReceiptVerification;
  const why = [outcome.failureClass, outcome.detail].filter((x) => x !== undefined).join(': ');
  return [
    `receipt     ${String(r.receiptId)}`,
    `run         ${String(r.runId)} (occurrence ${String(r.occurrenceId)}, attempt ${String(r.attemptNumber)})`,
    `automation  ${String(r.automationId)} (revision ${String(r.automationRevision)})`,
    `outcome     ${outcome.disposition}${why === '' ? '' : ` (${why})`}`,
    `produced    ${String(r.producedAt)} by ${String((r.producer as { component?: string } | undefined)?.component)}`,
    `integrity   ${verification.verified ? 'verified' : 'NOT verified'} (sha256, jcs-rfc8785)`,
  ].join('\n');
}

/**
 * `receipt --verify`: the digest recomputed here over the receipt as read, not the verdict the engine sent,
 * so a receipt altered anywhere between the store and this terminal reads as not verified.
 */
export function verifyReceiptResult(result: Rendered): { verified: boolean; line: string; result: Rendered } {
  const receipt = result.receipt as Rendered;
  const verdict = verifyIntegrity(receipt);
  const verification: ReceiptVerification = {
    verified: verdict.valid,
    algorithm: 'sha256',
    canonicalization: 'jcs-rfc8785',
    ...(verdict.expected === undefined ? {} : { expected: verdict.expected }),
    actual: verdict.actual,
  };
  const name = `receipt ${String(receipt.receiptId)} of run ${String(receipt.runId)}`;
  const line = verdict.valid
    ? `${name}: verified (sha256 over jcs-rfc8785: ${verdict.actual})`
    : `${name}: NOT verified: it carries ${verdict.expected ?? 'no digest'}, its body digests to ${verdict.actual}`;
  return { verified: verdict.valid, line, result: { ...result, verification } };
}

import { ContractError } from '../contract/errors.js';
import type { QuarantineCause } from '../guards/quarantine.js';
import type { LaunchResult } from '../runtime/runtime.js';

/**
 * Retryable failures exhausted the policy, or a revision failed its integrity check: the automation is
 * quarantined, for this reason, with the facts that prove the cause to the quarantine machine's guard.
 */
export type QuarantineRequest = { automationId: string; reason: string; cause: QuarantineCause };

/** What became of one release of a committed launch. */
export interface LaunchOutcome {
  outboxId: string;
  result: LaunchResult | { outcome: 'unconfirmed'; detail: string } | { outcome: 'skipped'; detail: string };
  quarantine?: QuarantineRequest;
  /** Why nothing was launched, when the engine itself refused (the definition failed its integrity check). */
  error?: DefinitionIntegrityError;
  /** The session's exit, cued before the runtime answered, was settled in the answer's own commit. */
  exitSettled?: true;
}

/** A launch marked `sending` in a transaction (a command's, a pass's), not yet sent. */
export interface QueuedLaunch {
  /** Calls the runtime and commits its answer: only once the transaction that queued the launch is durable. */
  release(): Promise<LaunchOutcome>;
  /** The transaction that queued the launch rolled back: the engine forgets it. */
  abandon(): void;
}

/**
 * The definition revision about to be executed does not match its integrity digest: the store served bytes
 * other than those committed. Nothing is launched; the automation is quarantined until an operator looks.
 */
export class DefinitionIntegrityError extends ContractError {
  constructor(
    automationId: string,
    revision: number,
    details: { computed: string; carried: string | null; pinned: string | null },
  ) {
    super(
      'INTERNAL',
      `definition ${automationId} revision ${revision} failed its integrity check before launch: ` +
        `its stored body digests to ${details.computed}, ` +
        `but it carries ${details.carried ?? 'no digest'} ` +
        `and the occurrence pins ${details.pinned ?? 'no digest'}; ` +
        'nothing was launched and the automation is quarantined (check the store, then lift the quarantine)',
      { automationId, revision, ...details },
    );
    this.name = 'DefinitionIntegrityError';
  }
}

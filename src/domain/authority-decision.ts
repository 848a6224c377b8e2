import type { AuthorityBinding, AuthorityFacts, AuthorityRefusal, ApprovalEntry } from './authority.js';

/** What the gate decided: refuse, or authorise (consuming `consume` when the binding requires an approval). */
export type AuthorityVerdict = { refusal: AuthorityRefusal } | { authorised: true; consume?: ApprovalEntry };

const refuse = (code: AuthorityRefusal['code'], detail: string): AuthorityVerdict => ({ refusal: { code, detail } });

/** When an approval stops authorising: its own expiry, shortened to the binding's TTL when the binding names one. */
export function approvalExpiry(approval: ApprovalEntry, binding: AuthorityBinding): number {
  const own = Date.parse(approval.expiresAt);
  const ttl = binding.approval?.ttlMinutes;
  return ttl === undefined ? own : Math.min(own, Date.parse(approval.grantedAt) + ttl * 60_000);
}

function decideApproval(
  binding: AuthorityBinding,
  approval: ApprovalEntry | undefined,
  now: string,
  runId: string,
): AuthorityVerdict {
  if (binding.approval?.required !== true) return { authorised: true };
  const nonce = binding.approval.nonce;
  if (approval === undefined)
    return refuse(
      'approval_required',
      nonce === undefined
        ? `approval required: no approval was granted for ${binding.automationId}`
        : `approval required: no approval with nonce ${nonce} was granted`,
    );
  // Scope first: another automation's approval is no approval of this one, whatever its state, and answering
  // "expired" or "replayed" would hide the confused deputy.
  if (approval.automationId !== binding.automationId)
    return refuse(
      'approval_other_automation',
      `approval issued for a different automation: nonce ${approval.nonce} authorises ${approval.automationId}, ` +
        `not ${binding.automationId}`,
    );
  // A later attempt of the run that consumed it is still that one authorised run.
  if (approval.consumed !== undefined) {
    if (approval.consumed.runId === runId) return { authorised: true };
    return refuse(
      'approval_replayed',
      `approval replayed: nonce ${approval.nonce} was consumed at ${approval.consumed.at} ` +
        `by run ${approval.consumed.runId}`,
    );
  }
  const expiry = approvalExpiry(approval, binding);
  if (expiry <= Date.parse(now))
    return refuse(
      'approval_expired',
      `approval expired: nonce ${approval.nonce} stopped authorising at ${new Date(expiry).toISOString()}`,
    );
  return { authorised: true, consume: approval };
}

/**
 * The dispatch-time decision, pure over what the dispatch transaction read. Checked in upstream's order:
 * authority unavailable (fail closed) → familiar stale or revoked (a forged revision is one the registry does
 * not hold) → capability downgrade → approval required / issued for another automation / replayed / expired
 * (scope comes before the approval's own state, where upstream checks it last).
 *
 * @example
 * ```ts
 * const verdict = decideAuthority(binding, await readAuthorityFacts(tx, binding), step.now, runId);
 * if ('refusal' in verdict) console.log(verdict.refusal.detail); // "familiar revision stale or revoked: …"
 * ```
 */
export function decideAuthority(
  binding: AuthorityBinding,
  facts: AuthorityFacts,
  now: string,
  runId: string,
): AuthorityVerdict {
  const service = facts.service;
  if (service !== undefined && !service.available)
    return refuse(
      'authority_unavailable',
      `authority unavailable since ${service.since}${service.reason === undefined ? '' : ` (${service.reason})`}; ` +
        'dispatch fails closed',
    );
  const f = facts.familiar;
  if (f === undefined || f.revoked || f.revision !== binding.familiarRevision)
    return refuse(
      'familiar_stale_or_revoked',
      `familiar revision stale or revoked: binding names ${binding.familiarId}@${binding.familiarRevision}, ` +
        (f === undefined
          ? 'the registry holds no such familiar'
          : `the registry holds ${f.familiarId}@${f.revision}${f.revoked ? ' (revoked)' : ''}`),
    );
  const held = new Set(facts.runtime?.capabilities ?? []);
  const missing = binding.requiredCapabilities.filter((c) => !held.has(c));
  if (missing.length > 0)
    return refuse(
      'capability_downgrade',
      `capability downgrade: runtime ${binding.runtime} no longer holds ${missing.join(', ')}`,
    );
  return decideApproval(binding, facts.approval, now, runId);
}

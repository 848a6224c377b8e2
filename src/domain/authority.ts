import { ContractError } from '../contract/errors.js';
import type { StoreReader } from '../store/store.js';

/**
 * Runtime Authority (coven.automations.authority.v1): the exact identity a run is authorised under, kept as the
 * definition's extension under this key, so every revision pins its own binding and the digest covers it.
 */
export const AUTHORITY_EXTENSION = 'coven.automations.authority.v1';

/**
 * Record kinds of the authority registry. Each changes only through its command (authority-commands.ts),
 * except an approval's consumption, which the dispatcher commits with the dispatch it authorises.
 */
export const AUTHORITY_KINDS = {
  /** `<familiarId>`: the familiar's current revision and whether it is revoked. */
  familiar: 'authority-familiar',
  /** `<runtimeId>`: the capabilities the runtime holds now. */
  runtime: 'authority-runtime',
  /** `<nonce>`: one single-use approval, scoped to one automation, with an expiry. */
  approval: 'authority-approval',
  /** `service`: whether the authority service can be consulted at all. */
  service: 'authority-service',
} as const;

export const AUTHORITY_SERVICE_ID = 'service';

/** A definition's authority binding: who it runs as, which familiar revision, which runtime with what. */
export interface AuthorityBinding {
  automationId: string;
  principalId: string;
  familiarId: string;
  familiarRevision: number;
  runtime: string;
  requiredCapabilities: string[];
  approval?: { required?: boolean; ttlMinutes?: number; nonce?: string };
}

export interface FamiliarEntry {
  familiarId: string;
  /** Revisions start at 1; registering the familiar again makes a new one and every older revision stale. */
  revision: number;
  revoked: boolean;
  registeredAt: string;
  revokedAt?: string;
  reason?: string;
}

export interface RuntimeCapabilities {
  runtimeId: string;
  capabilities: string[];
  setAt: string;
}

export interface ApprovalEntry {
  nonce: string;
  automationId: string;
  grantedAt: string;
  expiresAt: string;
  grantedBy: string;
  consumed?: { at: string; occurrenceId: string; runId: string };
  /** Set when an operator ended it early: `expiresAt` is then that instant. */
  expired?: { at: string; by: string; reason?: string };
}

export interface AuthorityService {
  available: boolean;
  since: string;
  reason?: string;
}

/** Why a dispatch was refused, in the order the gate checks: the first that applies is the answer. */
export type AuthorityRefusalCode =
  | 'authority_unavailable'
  | 'familiar_stale_or_revoked'
  | 'capability_downgrade'
  | 'approval_required'
  | 'approval_replayed'
  | 'approval_expired'
  | 'approval_other_automation';

/** How a refused dispatch's occurrence, run and attempt reasons start; the doctor finds refusals by it. */
export const AUTHORITY_REFUSAL_PREFIX = 'authority: ';

export interface AuthorityRefusal {
  code: AuthorityRefusalCode;
  /** Operator-facing text, always starting with the refusal's words (e.g. "approval expired"). */
  detail: string;
}

const ID = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/;

function invalid(why: string): ContractError {
  return new ContractError('VALIDATION_FAILED', `authority binding: ${why}`, { field: AUTHORITY_EXTENSION });
}

function stringList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string' && v.length > 0 && v.length <= 128);
}

function checkApproval(approval: unknown): void {
  if (approval === undefined) return;
  if (typeof approval !== 'object' || approval === null || Array.isArray(approval))
    throw invalid('approval must be an object');
  const a = approval as Record<string, unknown>;
  const unknown = Object.keys(a).filter((k) => !['required', 'ttlMinutes', 'nonce'].includes(k));
  if (unknown.length > 0) throw invalid(`unknown approval fields ${unknown.join(', ')}`);
  if (a.required !== undefined && typeof a.required !== 'boolean') throw invalid('approval.required must be boolean');
  if (a.ttlMinutes !== undefined && !(Number.isInteger(a.ttlMinutes) && (a.ttlMinutes as number) >= 1))
    throw invalid('approval.ttlMinutes must be an integer >= 1');
  if (a.nonce !== undefined && !(typeof a.nonce === 'string' && ID.test(a.nonce)))
    throw invalid('approval.nonce must be 1-128 id characters');
}

const BINDING_KEYS = new Set([
  'automationId',
  'principalId',
  'familiarId',
  'familiarRevision',
  'runtime',
  'requiredCapabilities',
  'approval',
]);

/** Checks a binding against coven.automations.authority.v1 (closed object, required fields) for `automationId`. */
export function checkBinding(value: unknown, automationId: string): AuthorityBinding {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid('must be an object');
  const b = value as Record<string, unknown>;
  const unknown = Object.keys(b).filter((k) => !BINDING_KEYS.has(k));
  if (unknown.length > 0) throw invalid(`unknown fields ${unknown.join(', ')}`);
  for (const key of ['automationId', 'principalId', 'familiarId', 'runtime'] as const)
    if (!(typeof b[key] === 'string' && ID.test(b[key]))) throw invalid(`${key} must be 1-128 id characters`);
  if (b.automationId !== automationId) throw invalid(`binds automation ${String(b.automationId)}, not ${automationId}`);
  if (!(Number.isInteger(b.familiarRevision) && (b.familiarRevision as number) >= 1))
    throw invalid('familiarRevision must be an integer >= 1');
  if (!stringList(b.requiredCapabilities)) throw invalid('requiredCapabilities must be a list of names');
  checkApproval(b.approval);
  return value as AuthorityBinding;
}

/** The binding a definition revision carries, or undefined for an ordinary (unbound) definition. */
export function bindingOf(definition: { extensions?: Record<string, unknown> }): AuthorityBinding | undefined {
  return definition.extensions?.[AUTHORITY_EXTENSION] as AuthorityBinding | undefined;
}

/** Everything the gate reads, read in the dispatch transaction so a decision and its commit see one state. */
export interface AuthorityFacts {
  service: AuthorityService | undefined;
  familiar: FamiliarEntry | undefined;
  runtime: RuntimeCapabilities | undefined;
  /** The approval the binding names (by nonce), or the oldest open one of this automation. */
  approval: ApprovalEntry | undefined;
}

export async function readAuthorityFacts(reader: StoreReader, binding: AuthorityBinding): Promise<AuthorityFacts> {
  const service = (await reader.get<AuthorityService>(AUTHORITY_KINDS.service, AUTHORITY_SERVICE_ID))?.data;
  const familiar = (await reader.get<FamiliarEntry>(AUTHORITY_KINDS.familiar, binding.familiarId))?.data;
  const runtime = (await reader.get<RuntimeCapabilities>(AUTHORITY_KINDS.runtime, binding.runtime))?.data;
  return { service, familiar, runtime, approval: await approvalFor(reader, binding) };
}

async function approvalFor(reader: StoreReader, binding: AuthorityBinding): Promise<ApprovalEntry | undefined> {
  if (binding.approval?.required !== true) return undefined;
  const nonce = binding.approval.nonce;
  if (nonce !== undefined) return (await reader.get<ApprovalEntry>(AUTHORITY_KINDS.approval, nonce))?.data;
  const mine = (await reader.list<ApprovalEntry>(AUTHORITY_KINDS.approval))
    .map((r) => r.data)
    .filter((a) => a.automationId === binding.automationId)
    .sort((x, y) => x.grantedAt.localeCompare(y.grantedAt));
  return mine.find((a) => a.consumed === undefined) ?? mine.at(-1);
}

/** A conformance.vector.v1 document, as far as this runner reads it. */
export interface ConformanceVector {
  vectorId: string;
  profile: string;
  category?: string;
  title: string;
  virtualTime?: { start: string; hostTimezone?: string };
  prerequisites?: string[];
  input: {
    definitions?: Array<Record<string, unknown> & { id: string; status: string }>;
    invalidDefinitions?: Array<Record<string, unknown>>;
    /** Authority bindings (coven.automations.authority.v1) seeded before the operations. */
    bindings?: Array<Record<string, unknown>>;
    operations?: Array<Record<string, unknown> & { op: string }>;
  };
  expected: Record<string, unknown>;
}

export type ExpectationStatus = 'pass' | 'fail' | 'differs' | 'unsupported';

export interface ExpectationResult {
  expectation: string;
  status: ExpectationStatus;
  expected?: unknown;
  observed?: unknown;
  /** For `differs` and `unsupported`: the contract rule or the missing capability. */
  reason?: string;
  /** For `differs`: the id of the contract rule that decides it. */
  rule?: string;
}

export interface VectorReport {
  file: string;
  vectorId: string;
  title: string;
  status: ExpectationStatus;
  expectations: ExpectationResult[];
}

/** The worst status wins: fail > unsupported > differs > pass. */
export function overall(results: ExpectationResult[]): ExpectationStatus {
  for (const status of ['fail', 'unsupported', 'differs'] as const)
    if (results.some((r) => r.status === status)) return status;
  return 'pass';
}

import type { DefinitionFacts } from '../../daemon/console-rows.js';
import type { DaemonApi } from './api.js';
import type { FailureRow, HoldRow } from './failure-panel.js';

/** The filters the console reads take (`GET /api/v1/console/*`); an empty value is no filter. */
export interface Filter {
  q?: string;
  automation?: string;
  /** Comma-separated states. */
  state?: string;
  tag?: string;
  /** ISO instants. */
  from?: string;
  to?: string;
}

/** One page of a console read: its rows, how many matched in all, and the next page's cursor. */
export interface ConsolePage {
  matched: number;
  cursor: { hasMore: boolean; next?: string };
}

export interface ConsoleOccurrence {
  occurrenceId: string;
  automationId: string;
  state: string;
  stateReason?: string;
  scheduledFor: string;
  activeRunRef?: string;
  timezone: string | null;
  tags: string[];
}

export interface ConsoleRun {
  runId: string;
  occurrenceId: string;
  automationId: string;
  state: string;
  startedAt: string;
  finishedAt?: string;
  timezone: string | null;
  tags: string[];
  latestAttempt: { attemptNumber: number; state: string } | null;
  failure?: FailureRow;
  hold?: HoldRow;
}

/** A definitions row of the console's find panel: the same facts the daemon shows beside any row. */
export type ConsoleDefinition = DefinitionFacts;

export type Scope = 'occurrences' | 'runs' | 'definitions';

export interface ScopeRows {
  occurrences: ConsoleOccurrence[];
  runs: ConsoleRun[];
  definitions: ConsoleDefinition[];
}

/** The query string of a filter and page (empty values left out). */
export function queryOf(filter: Filter, extra: Record<string, string | undefined> = {}): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries({ ...filter, ...extra }))
    if (typeof value === 'string' && value.trim() !== '') query.set(name, value.trim());
  return query.toString();
}

/** One page of a scope's rows under a filter. A route the daemon lacks reads as an empty page. */
export async function readPage<S extends Scope>(
  api: DaemonApi,
  scope: S,
  filter: Filter,
  page: { limit: number; cursor?: string },
): Promise<ConsolePage & { rows: ScopeRows[S] }> {
  const query = queryOf(filter, { limit: String(page.limit), cursor: page.cursor });
  const body = await api.get<ConsolePage & Partial<ScopeRows>>(`/api/v1/console/${scope}?${query}`);
  const rows = (body?.[scope] ?? []) as ScopeRows[S];
  return { rows, matched: body?.matched ?? 0, cursor: body?.cursor ?? { hasMore: false } };
}

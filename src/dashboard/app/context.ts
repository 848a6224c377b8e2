import { ActionError, type CommandResponse, type DaemonApi } from './api.js';

/** What every panel shares: the API client, the message line and a way to ask for fresh data. */
export interface Dashboard {
  api: DaemonApi;
  /** Whether this page may act (its token was accepted); a read-only page shows no action at all. */
  readonly canAct: boolean;
  /** Shows one line in the message bar (an action's outcome, a request still pending, or a refusal). */
  notify(text: string, kind: 'ok' | 'pending' | 'error'): void;
  /** Re-reads every panel soon (coalesced). */
  refresh(): void;
  /** Opens an occurrence's runs, attempts and receipts in the detail panel. */
  select(occurrenceId: string | undefined): void;
}

/** The outcome a committed or replayed command reports, for the message bar. */
function outcomeLine(label: string, response: CommandResponse): string {
  const result = response.result ?? {};
  const status = typeof result.status === 'string' ? ` → ${result.status}` : '';
  const revision = response.revision === undefined ? '' : ` (revision ${response.revision})`;
  return `${label}: ${response.outcome}${status}${revision}`;
}

/** What a committed cancellation request whose session still runs means (the CLI says the same). */
export const CANCEL_PENDING_LINE = 'cancellation requested; pending until the runtime acknowledges';

/**
 * CANCEL_PENDING is the contract's answer to a cancellation it accepted while the session still runs: the
 * request is committed, the session told to stop, and the occurrence settles cancelled once the runtime
 * acknowledges. A request under way, not a refusal.
 */
export const isCancelPending = (error: unknown): boolean =>
  error instanceof ActionError && error.envelope.code === 'CANCEL_PENDING';

/**
 * Runs one operator action: sends it, reports its outcome or its typed refusal as a readable line, and
 * refreshes the panels. Never throws; a refusal is a message, not a broken page.
 *
 * @example
 * ```ts
 * await act(dashboard, 'pause daily-notes', 'definition.pause.v1', { automationId }, { expectedRevision: 3 });
 * ```
 */
export async function act(
  dashboard: Dashboard,
  label: string,
  command: string,
  payload: Record<string, unknown>,
  options: { expectedRevision?: number; statement?: string } = {},
): Promise<CommandResponse | undefined> {
  try {
    const response = await dashboard.api.command(command, payload, { statement: `dashboard: ${label}`, ...options });
    dashboard.notify(outcomeLine(label, response), 'ok');
    return response;
  } catch (error) {
    if (isCancelPending(error)) {
      dashboard.notify(`${label}: ${CANCEL_PENDING_LINE}`, 'pending');
      return undefined;
    }
    const text = error instanceof ActionError ? error.message : String(error);
    dashboard.notify(`${label} refused — ${text}`, 'error');
    return undefined;
  } finally {
    dashboard.refresh();
  }
}

/** A read that fails shows its reason in place of the panel instead of throwing. */
export function failureText(error: unknown): string {
  return error instanceof ActionError ? error.message : (error as Error).message;
}

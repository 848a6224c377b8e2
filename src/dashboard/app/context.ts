import { ActionError, type CommandResponse, type DaemonApi } from './api.js';

/** What every panel shares: the API client, the message line and a way to ask for fresh data. */
export interface Dashboard {
  api: DaemonApi;
  /** Shows one line in the message bar (an action's outcome or a refusal). */
  notify(text: string, kind: 'ok' | 'error'): void;
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

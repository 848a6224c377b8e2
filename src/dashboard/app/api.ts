/** A typed error envelope, as the contract defines it (code + frozen HTTP status). */
export interface ErrorEnvelope {
  code: string;
  httpStatus: number;
  message: string;
  retryable?: boolean;
  details?: Record<string, unknown>;
  currentRevision?: number;
}

/** The engine's answer to a command envelope. */
export interface CommandResponse {
  command: string;
  adoptionKey: string;
  outcome: 'committed' | 'replayed' | 'rejected' | string;
  revision?: number;
  result?: Record<string, unknown>;
  error?: ErrorEnvelope;
}

/** A command the daemon refused (or a transport failure turned into the same shape). */
export class ActionError extends Error {
  constructor(readonly envelope: ErrorEnvelope) {
    super(readableError(envelope));
  }
}

/**
 * One line an operator can read: `CODE (status): message`, plus the detail that says what to do (the current
 * revision of a conflict, the field of a validation failure).
 *
 * @example
 * ```ts
 * readableError({ code: 'REVISION_CONFLICT', httpStatus: 409, message: 'stale', currentRevision: 4 });
 * // 'REVISION_CONFLICT (409): stale (current revision 4)'
 * ```
 */
export function readableError(error: ErrorEnvelope): string {
  const extras: string[] = [];
  if (error.currentRevision !== undefined) extras.push(`current revision ${error.currentRevision}`);
  const field = error.details?.field ?? error.details?.path;
  if (typeof field === 'string') extras.push(`field ${field}`);
  if (error.retryable === true) extras.push('retryable');
  const tail = extras.length === 0 ? '' : ` (${extras.join(', ')})`;
  return `${error.code} (${error.httpStatus}): ${error.message}${tail}`;
}

/** A fresh adoption key (the contract's syntax: first alphanumeric, then `[A-Za-z0-9._:-]`, 8–200 chars). */
export function newAdoptionKey(): string {
  return `dash-${crypto.randomUUID()}`;
}

/** What the daemon answers with a non-JSON body or a network failure, as an error envelope. */
function transportError(status: number, text: string): ErrorEnvelope {
  return { code: 'INTERNAL', httpStatus: status, message: text.slice(0, 300) || 'the daemon did not answer' };
}

/**
 * The dashboard's client for the daemon's HTTP API. The token lives only in this object (taken from the
 * page's `?token=`, which the page then removes from the address bar); it goes out as `Authorization: Bearer`
 * on commands and as `?token=` on the event stream, the one request a browser cannot give a header.
 */
export class DaemonApi {
  constructor(private token: string | undefined) {}

  get hasToken(): boolean {
    return this.token !== undefined;
  }

  /**
   * Asks the daemon whether the page's token is accepted. A refused one is dropped (the page goes on read-only,
   * without sending it again), and the answer says one was refused.
   */
  async checkToken(): Promise<'operator' | 'read-only' | 'token-refused'> {
    const session = await this.get<{ authority: string }>('/api/v1/console/session');
    if (session?.authority === 'operator') return 'operator';
    if (this.token === undefined) return 'read-only';
    this.token = undefined;
    return 'token-refused';
  }

  /** Sends one command envelope; answers its result, or throws {@link ActionError} with a readable message. */
  async command(
    command: string,
    payload: Record<string, unknown>,
    options: { expectedRevision?: number; statement?: string; adoptionKey?: string } = {},
  ): Promise<CommandResponse> {
    const envelope = {
      schemaVersion: 'coven.automations.v1',
      command,
      adoptionKey: options.adoptionKey ?? newAdoptionKey(),
      ...(options.expectedRevision === undefined ? {} : { expectedRevision: options.expectedRevision }),
      origin: { principal: { principalId: 'operator:dashboard', displayName: 'dashboard' }, channel: 'http' },
      intent: { statement: options.statement ?? `dashboard: ${command}` },
      payload,
    };
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.token !== undefined) headers.authorization = `Bearer ${this.token}`;
    let response: Response;
    try {
      response = await fetch('/api/v1/actions', { method: 'POST', headers, body: JSON.stringify(envelope) });
    } catch (error) {
      throw new ActionError(transportError(0, `the daemon cannot be reached: ${(error as Error).message}`));
    }
    const body = await this.json(response);
    const error = (body as CommandResponse | undefined)?.error ?? (body as { code?: string } | undefined);
    if ((body as CommandResponse | undefined)?.outcome === 'rejected' || (!response.ok && error?.code))
      throw new ActionError(error as ErrorEnvelope);
    if (!response.ok || body === undefined) throw new ActionError(transportError(response.status, response.statusText));
    return body as CommandResponse;
  }

  /** A read command's result (reads are committed answers; a refusal throws). */
  async read<T = Record<string, unknown>>(command: string, payload: Record<string, unknown>): Promise<T> {
    return (await this.command(command, payload)).result as T;
  }

  /** A GET route's JSON: undefined on 404 (a route another part of the daemon did not register). */
  async get<T>(path: string): Promise<T | undefined> {
    const response = await fetch(path, { headers: this.token ? { authorization: `Bearer ${this.token}` } : {} });
    if (response.status === 404) return undefined;
    const body = await this.json(response);
    // A refusal comes as a rejected response whose `error` is the envelope.
    const refusal = (body as { error?: ErrorEnvelope } | undefined)?.error ?? (body as ErrorEnvelope | undefined);
    if (!response.ok) throw new ActionError(refusal ?? transportError(response.status, ''));
    return body as T;
  }

  /** The changefeed stream's URL after a global feed position (none: from the beginning). */
  eventsUrl(after: number | undefined): string {
    const query = new URLSearchParams();
    if (after !== undefined) query.set('after', String(after));
    if (this.token !== undefined) query.set('token', this.token);
    const text = query.toString();
    return `/api/v1/events${text === '' ? '' : `?${text}`}`;
  }

  private async json(response: Response): Promise<unknown> {
    const text = await response.text();
    try {
      return JSON.parse(text) as unknown;
    } catch {
      if (!response.ok) throw new ActionError(transportError(response.status, text));
      return undefined;
    }
  }
}

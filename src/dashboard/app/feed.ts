import { el } from './dom.js';
import type { DaemonApi } from './api.js';

/** The contract's event kinds: the stream names each SSE message by its kind, so each needs a listener. */
const EVENT_KINDS = [
  'definition.created',
  'definition.revised',
  'definition.activated',
  'definition.paused',
  'definition.disabled',
  'definition.invalidated',
  'definition.tombstoned',
  'definition.imported',
  'occurrence.transitioned',
  'occurrence.misfire_recorded',
  'run.transitioned',
  'attempt.transitioned',
  'receipt.recorded',
  'feed.snapshot',
  'message',
];

/** Events kept on the page; older ones leave the list (the store keeps them). */
const KEEP = 200;

interface FeedEvent {
  kind: string;
  summary: string;
  stream: { kind: string; id: string };
  recordedAt: string;
  payload: { from?: string; to?: string };
}

export interface FeedOptions {
  api: DaemonApi;
  /** The daemon refused the stream's token (it restarted with a new one): the page goes read-only. */
  onTokenRefused(): void;
  list: HTMLElement;
  status: HTMLElement;
  /** Called for every event, after it is shown: the panels re-read. */
  onEvent(event: FeedEvent): void;
}

function status(node: HTMLElement, text: string, kind: 'ok' | 'warn' | 'bad'): void {
  node.textContent = text;
  node.className = `badge ${kind}`;
}

/**
 * The live changefeed: `GET /api/v1/events` as server-sent events, one per committed event, newest on top.
 * It resumes after the last position it showed when the connection drops, so nothing is shown twice.
 */
export class LiveFeed {
  private source: EventSource | undefined;
  private lastPosition: number | undefined;
  private retryTimer: number | undefined;

  constructor(private readonly options: FeedOptions) {}

  /**
   * Connects after the feed's last `recent` entries (the daemon finds where they start), so the page shows the
   * latest changes rather than replaying the store's whole history.
   */
  async start(recent = 50): Promise<void> {
    if (this.options.api.hasToken) {
      const tail = await this.options.api
        .get<{ after: number }>(`/api/v1/console/feed-tail?recent=${recent}`)
        .catch(() => undefined);
      if (tail !== undefined && tail.after >= 0) this.lastPosition = tail.after;
    }
    this.connect();
  }

  connect(): void {
    if (!this.options.api.hasToken) {
      status(this.options.status, 'live feed needs the token (?token=)', 'bad');
      return;
    }
    const source = new EventSource(this.options.api.eventsUrl(this.lastPosition));
    this.source = source;
    source.onopen = () => status(this.options.status, 'live', 'ok');
    source.onerror = (event) => void this.failed(source, event);
    for (const kind of EVENT_KINDS) source.addEventListener(kind, (message) => this.show(message as MessageEvent));
  }

  /**
   * The stream ended or could not open. A browser cannot read the status of a refused stream, so the page asks
   * whether its token still holds: a refused token stops the feed (retrying would never succeed); anything
   * else (a restarting daemon, an expired cursor) reconnects a second later.
   */
  private async failed(source: EventSource, event: Event): Promise<void> {
    source.close();
    const authority = await this.options.api.checkToken().catch(() => 'unreachable' as const);
    if (authority === 'token-refused' || authority === 'read-only') {
      status(this.options.status, 'token refused — live feed needs the token', 'bad');
      this.options.onTokenRefused();
      return;
    }
    const refusal = this.refusalOf(event);
    // An expired cursor lies behind retention's compaction: the feed starts again from its beginning.
    if (refusal?.code === 'CURSOR_EXPIRED') this.lastPosition = undefined;
    status(
      this.options.status,
      `${refusal ? `${refusal.code}: ${refusal.message} — ` : 'disconnected — '}reconnecting`,
      'bad',
    );
    // The daemon may be restarting; a browser retry loop a second apart is gentle enough.
    this.retryTimer = window.setTimeout(() => this.connect(), 1000);
  }

  close(): void {
    if (this.retryTimer !== undefined) window.clearTimeout(this.retryTimer);
    this.source?.close();
  }

  /** The typed error the daemon sends as an `event: error` frame before it ends the stream, if this is one. */
  private refusalOf(event: Event): { code: string; message: string } | undefined {
    if (!(event instanceof MessageEvent) || typeof event.data !== 'string') return undefined;
    try {
      const body = JSON.parse(event.data) as { error?: { code: string; message: string }; code?: string };
      return body.error ?? (body.code === undefined ? undefined : (body as { code: string; message: string }));
    } catch {
      return undefined;
    }
  }

  private show(message: MessageEvent<string>): void {
    const position = Number(message.lastEventId);
    if (Number.isFinite(position) && this.lastPosition !== undefined && position <= this.lastPosition) return;
    if (Number.isFinite(position)) this.lastPosition = position;
    let event: FeedEvent;
    try {
      event = JSON.parse(message.data) as FeedEvent;
    } catch {
      return;
    }
    // A transition's summary repeats its stream and its move, so the line shows the move once and no summary;
    // the entry's one number is its feed position (the list itself is unnumbered).
    const transition = event.payload.from !== undefined;
    const item = el(
      'li',
      { 'data-kind': event.kind, 'data-stream': `${event.stream.kind}/${event.stream.id}` },
      el('span', { class: 'mono muted' }, `#${message.lastEventId} `),
      el('strong', {}, event.kind),
      el('span', { class: 'mono' }, ` ${event.stream.kind}/${event.stream.id}`),
      transition ? ` ${event.payload.from} → ${event.payload.to}` : null,
      transition ? null : el('div', { class: 'muted' }, event.summary),
    );
    this.options.list.prepend(item);
    while (this.options.list.children.length > KEEP) this.options.list.lastElementChild?.remove();
    this.options.onEvent(event);
  }
}

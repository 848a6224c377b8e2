import { request as httpRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { resolve } from 'node:path';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { ContractError, type ErrorCode, type ErrorEnvelope } from '../contract/errors.js';
import type { CommandResponse } from '../command-handler/envelope.js';
import type { EventEnvelope, StreamRef } from '../changefeed/event-envelope.js';
import { readDaemonRecord } from './files.js';
import { isProof, newNonce, PROOF_PATH, socketToTrust, untrustedDaemon } from './daemon-proof.js';

/** Where a client reaches a daemon: its Unix socket (trusted), or loopback TCP with the token for mutations. */
export type DaemonTarget = { socketPath: string } | { url: string; token?: string };

/** How long {@link DaemonClient.connect} waits for a daemon's health answer before calling it gone. */
const CONNECT_TIMEOUT_MS = 2_000;

/** A changefeed entry as the daemon streams it: the cursor `after` takes, and the event. */
export interface StreamedEvent {
  position: number;
  event: EventEnvelope;
}

/** A refusal the daemon sent as a rejected response, as the typed error it stands for. */
function errorFrom(body: unknown, status: number): ContractError {
  const envelope = (body as { error?: ErrorEnvelope } | undefined)?.error;
  if (envelope === undefined || typeof envelope.code !== 'string')
    return new ContractError('INTERNAL', `the daemon answered HTTP ${status} without an error envelope`);
  return new ContractError(envelope.code as ErrorCode, envelope.message, envelope.details, {
    retryable: envelope.retryable,
    ...(envelope.currentRevision === undefined ? {} : { currentRevision: envelope.currentRevision }),
  });
}

async function readBody(response: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    throw new ContractError('INTERNAL', `the daemon answered HTTP ${response.statusCode} with a body that is not JSON`);
  }
}

/**
 * A client of a running daemon (`coven-automata start`): the same commands as `engine.commands.handle`, its
 * read routes, and the live changefeed, over the daemon's Unix socket (found beside the store) or loopback
 * TCP with its token. Loads no HTTP framework: node:http and an SSE parser only.
 *
 * @example
 * ```ts
 * import { DaemonClient } from 'coven-automata/daemon';
 *
 * const client = await DaemonClient.connect('.coven/automations.json');
 * if (client === undefined) throw new Error('no daemon serves this store');
 * const listed = await client.handle(listEnvelope); // a CommandResponse, as in-process
 * const controller = new AbortController();
 * for await (const { position, event } of client.events({ after: -1, signal: controller.signal }))
 *   console.log(position, event.kind, event.summary);
 * ```
 */
export class DaemonClient {
  constructor(readonly target: DaemonTarget) {}

  /**
   * The client of the daemon serving `storeFile`, or undefined when none does: no daemon record beside the
   * store, or one a stopped daemon left whose socket is gone or no longer answers. Before anything else is
   * sent, the socket must be a socket of this user's with mode 0600, and the daemon must prove it holds the
   * store's token (an HMAC of a fresh nonce); a socket that fails either is refused with AUTHORITY_REQUIRED.
   */
  static async connect(storeFile: string): Promise<DaemonClient | undefined> {
    const file = resolve(storeFile);
    const record = readDaemonRecord(file);
    if (record === undefined) return undefined;
    const token = socketToTrust(file, record.socketPath);
    if (token === undefined) return undefined;
    const client = new DaemonClient({ socketPath: record.socketPath });
    const nonce = newNonce();
    let response: IncomingMessage;
    try {
      ({ response } = await client.open('GET', `${PROOF_PATH}?nonce=${nonce}`, undefined, CONNECT_TIMEOUT_MS));
    } catch {
      return undefined;
    }
    const answer = (await readBody(response).catch(() => undefined)) as { storeFile?: unknown; proof?: unknown };
    // A daemon of another store at this path (a copied folder) is not this store's: the CLI opens the store itself.
    if (response.statusCode === 200 && typeof answer?.storeFile === 'string' && answer.storeFile !== file)
      return undefined;
    if (response.statusCode !== 200 || !isProof(answer?.proof, token, file, nonce))
      throw untrustedDaemon(file, record.socketPath, "it did not prove it holds the store's token");
    return client;
  }

  /** Sends one command envelope; the daemon's answer is the engine's CommandResponse, rejections included. */
  async handle(envelope: unknown): Promise<CommandResponse> {
    const { response, body } = await this.call('POST', '/api/v1/actions', JSON.stringify(envelope));
    if (typeof (body as CommandResponse | undefined)?.outcome !== 'string') throw errorFrom(body, response.statusCode!);
    return body as CommandResponse;
  }

  /** A JSON read route (`/healthz`, `/api/v1/capabilities`, ...); a refusal throws its typed ContractError. */
  async get<T = unknown>(path: string, timeoutMs?: number): Promise<T> {
    const { response, body } = await this.call('GET', path, undefined, timeoutMs);
    if (response.statusCode !== 200) throw errorFrom(body, response.statusCode!);
    return body as T;
  }

  /**
   * The changefeed, live: every entry after `after` (the global feed position; on another `stream`, its
   * sequence), then each new one as it commits, until `signal` aborts or the daemon stops.
   */
  async *events(
    options: { after?: number; stream?: StreamRef; signal?: AbortSignal } = {},
  ): AsyncGenerator<StreamedEvent> {
    const query = new URLSearchParams({ after: String(options.after ?? -1) });
    if (options.stream !== undefined) query.set('stream', `${options.stream.kind}/${options.stream.id}`);
    const { request, response } = await this.open('GET', `/api/v1/events?${query.toString()}`, undefined, undefined);
    if (response.statusCode !== 200) throw errorFrom(await readBody(response), response.statusCode!);
    const stop = () => request.destroy();
    options.signal?.addEventListener('abort', stop, { once: true });
    const pending: EventSourceMessage[] = [];
    const parser = createParser({ onEvent: (message) => void pending.push(message) });
    try {
      for await (const chunk of response) {
        parser.feed((chunk as Buffer).toString('utf8'));
        for (let message = pending.shift(); message !== undefined; message = pending.shift()) {
          if (message.event === 'error') throw errorFrom(JSON.parse(message.data), 500);
          yield { position: Number(message.id), event: JSON.parse(message.data) as EventEnvelope };
        }
      }
    } catch (error) {
      if (options.signal?.aborted !== true) throw error;
    } finally {
      options.signal?.removeEventListener('abort', stop);
      request.destroy();
    }
  }

  private async call(method: string, path: string, body?: string, timeoutMs?: number) {
    const { response } = await this.open(method, path, body, timeoutMs);
    return { response, body: await readBody(response) };
  }

  private open(method: string, path: string, body: string | undefined, timeoutMs: number | undefined) {
    const headers: Record<string, string> = {};
    if (body !== undefined) headers['content-type'] = 'application/json';
    let options: RequestOptions;
    if ('socketPath' in this.target) options = { socketPath: this.target.socketPath, path, method, headers };
    else {
      const url = new URL(path, this.target.url);
      if (this.target.token !== undefined) headers.authorization = `Bearer ${this.target.token}`;
      options = { hostname: url.hostname, port: url.port, path: url.pathname + url.search, method, headers };
    }
    return new Promise<{ request: ReturnType<typeof httpRequest>; response: IncomingMessage }>((done, fail) => {
      const request = httpRequest(options, (response) => done({ request, response }));
      request.once('error', fail);
      if (timeoutMs !== undefined) request.setTimeout(timeoutMs, () => request.destroy(new Error('timed out')));
      request.end(body);
    });
  }
}

import { ContractError } from '../contract/errors.js';

/** The most rows one console read answers: every page is bounded, whatever the store holds. */
export const MAX_CONSOLE_PAGE = 100;
/** The rows a console read answers when the caller names no limit. */
export const DEFAULT_CONSOLE_PAGE = 25;

/** A console read's filters, checked at the boundary: a bad one is VALIDATION_FAILED naming its field. */
export interface ConsoleFilter {
  /** Free text: an id (occurrence, run, automation) or part of one, or a state's name. */
  q?: string;
  automationId?: string;
  /** The states asked for (any of them); empty: every state. */
  states: string[];
  tag?: string;
  /** ISO instants: the slot (occurrences) or the start (runs) at or after `from`, before `to`. */
  from?: string;
  to?: string;
}

export interface ConsolePage {
  limit: number;
  cursor?: string;
}

const TEXT = /^[\p{L}\p{N} ._:@/#+-]{1,200}$/u;
const ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/;
const WHOLE = /^\d{1,4}$/;

function refuse(field: string, message: string): ContractError {
  return new ContractError('VALIDATION_FAILED', message, { field });
}

/** A query value given once as text; a repeated parameter (`?q=a&q=b`) is refused rather than guessed at. */
function single(query: Record<string, unknown>, name: string): string | undefined {
  const value = query[name];
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string') throw refuse(name, `${name} must be given once`);
  return value;
}

function instantOf(query: Record<string, unknown>, name: 'from' | 'to'): string | undefined {
  const text = single(query, name);
  if (text === undefined) return undefined;
  const at = Date.parse(text);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(text) || Number.isNaN(at))
    throw refuse(name, `${name} must be an ISO 8601 instant (2026-03-02T09:00:00Z), got ${JSON.stringify(text)}`);
  return new Date(at).toISOString();
}

/**
 * The filters of a console read's query string. `states` must name states of `known` (comma-separated).
 *
 * @example
 * ```ts
 * parseFilter({ state: 'failed,running', tag: 'nightly' }, new Set(['failed', 'running']));
 * // { states: ['failed', 'running'], tag: 'nightly' }
 * ```
 */
export function parseFilter(query: Record<string, unknown>, known: ReadonlySet<string>): ConsoleFilter {
  const q = single(query, 'q');
  if (q !== undefined && !TEXT.test(q)) throw refuse('q', 'q must be 1–200 letters, digits or ._:@/#+- characters');
  const automationId = single(query, 'automation');
  if (automationId !== undefined && !ID.test(automationId))
    throw refuse('automation', 'automation must be an automation id');
  const tag = single(query, 'tag');
  if (tag !== undefined && !TEXT.test(tag)) throw refuse('tag', 'tag must be 1–200 letters, digits or ._:@/#+-');
  const states = (single(query, 'state') ?? '').split(',').filter((s) => s !== '');
  for (const state of states)
    if (!known.has(state))
      throw refuse('state', `state ${JSON.stringify(state.slice(0, 40))} is not one of ${[...known].join(', ')}`);
  const from = instantOf(query, 'from');
  const to = instantOf(query, 'to');
  if (from !== undefined && to !== undefined && from >= to) throw refuse('from', 'from must be before to');
  return {
    states,
    ...(q === undefined ? {} : { q }),
    ...(automationId === undefined ? {} : { automationId }),
    ...(tag === undefined ? {} : { tag }),
    ...(from === undefined ? {} : { from }),
    ...(to === undefined ? {} : { to }),
  };
}

/** `limit` (1–100, default 25) and `cursor` of a console read's query string. */
export function parsePage(query: Record<string, unknown>): ConsolePage {
  const text = single(query, 'limit');
  if (text !== undefined && !WHOLE.test(text)) throw refuse('limit', 'limit must be a whole number');
  const limit = text === undefined ? DEFAULT_CONSOLE_PAGE : Number(text);
  if (limit < 1 || limit > MAX_CONSOLE_PAGE) throw refuse('limit', `limit must be 1–${MAX_CONSOLE_PAGE}`);
  const cursor = single(query, 'cursor');
  return cursor === undefined ? { limit } : { limit, cursor };
}

/** Where a page ends in its list's order: the row's sort key and id. */
export interface Position {
  key: string;
  id: string;
}

export function decodeCursor(cursor: string, scope: string): Position {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Record<string, unknown>;
    if (value.t === scope && typeof value.k === 'string' && typeof value.i === 'string')
      return { key: value.k, id: value.i };
  } catch {
    // the typed error below
  }
  throw refuse('cursor', `cursor is not one this daemon issued for ${scope}`);
}

export const encodeCursor = (p: Position, scope: string): string =>
  Buffer.from(JSON.stringify({ t: scope, k: p.key, i: p.id })).toString('base64url');

/**
 * One page of `rows` in `order` (newest first: key and id descending; else ascending), after the cursor. Answers
 * the page, how many rows matched in all, and the cursor of the next page while there is one.
 */
export function pageOf<T>(
  rows: T[],
  positionOf: (row: T) => Position,
  page: ConsolePage,
  scope: string,
  order: 'newest' | 'ascending',
): { rows: T[]; matched: number; cursor: { hasMore: boolean; next?: string } } {
  const sign = order === 'newest' ? -1 : 1;
  const compare = (a: Position, b: Position): number =>
    sign * (a.key === b.key ? (a.id < b.id ? -1 : a.id > b.id ? 1 : 0) : a.key < b.key ? -1 : 1);
  const sorted = rows.map((row) => ({ row, at: positionOf(row) })).sort((a, b) => compare(a.at, b.at));
  const after = page.cursor === undefined ? undefined : decodeCursor(page.cursor, scope);
  const rest = after === undefined ? sorted : sorted.filter((r) => compare(after, r.at) < 0);
  const shown = rest.slice(0, page.limit);
  const last = shown.at(-1);
  const hasMore = rest.length > page.limit;
  return {
    rows: shown.map((r) => r.row),
    matched: sorted.length,
    cursor: { hasMore, ...(hasMore && last !== undefined ? { next: encodeCursor(last.at, scope) } : {}) },
  };
}

/**
 * Whether an instant lies in the filter's range (`from` inclusive, `to` exclusive), compared as instants: stored
 * values need not share one ISO spelling (with or without milliseconds).
 */
export function inRange(at: string | undefined, filter: ConsoleFilter): boolean {
  if (filter.from === undefined && filter.to === undefined) return true;
  const time = at === undefined ? Number.NaN : Date.parse(at);
  if (Number.isNaN(time)) return false;
  return (
    (filter.from === undefined || time >= Date.parse(filter.from)) &&
    (filter.to === undefined || time < Date.parse(filter.to))
  );
}

import { deepFreeze } from '../deep-freeze.js';
import { horizonSql } from './feed-clock.js';
import type { Connection } from './connection.js';
import { liveWorkRow } from '../live-work.js';
import { ANY_DUE_SQL, liveWorkQuery } from './live-work-queries.js';
import { readTimeline, readTimelineCounts } from './timeline-queries.js';
import type { RecordRow } from './prefetch.js';
import type {
  ListOptions,
  LiveKind,
  LiveWork,
  LiveWorkOptions,
  LogEntry,
  ReadLogOptions,
  RecordVersion,
  StoredRecord,
  StoreReader,
  TimelineFilter,
  TimelineKind,
  TimelineOptions,
} from '../store.js';

type LogRow = { stream: string; sequence: number; position: number; data: unknown };

function range(columns: string, kind: string, options: ListOptions): [string, unknown[]] {
  const values: unknown[] = [kind];
  let where = 'kind = $1';
  if (options.after !== undefined) where += ` AND id > $${values.push(options.after)}`;
  if (options.before !== undefined) where += ` AND id < $${values.push(options.before)}`;
  // LIMIT NULL is no limit.
  return [
    `SELECT ${columns} FROM {s}.records WHERE ${where} ORDER BY id LIMIT $${values.push(options.limit ?? null)}`,
    values,
  ];
}

export const toRecord = <T>(row: RecordRow): StoredRecord<T> =>
  deepFreeze({ kind: row.kind, id: row.id, version: row.version, terminal: row.terminal, data: row.data as T });
const toEntry = <T>(row: LogRow): LogEntry<T> =>
  deepFreeze({ stream: row.stream, sequence: row.sequence, position: row.position, data: row.data as T });

/** Reads through one connection: inside a transaction they see its writes, outside its snapshot of commits. */
export class PostgresReader implements StoreReader {
  constructor(protected readonly db: Connection) {}

  // Record reads are often a transaction's first statement: then its BEGIN travels with them (Connection.rowsOpening).
  async get<T>(kind: string, id: string): Promise<StoredRecord<T> | undefined> {
    const [row] = await this.db.rowsOpening<RecordRow>('SELECT * FROM {s}.records WHERE kind = $1 AND id = $2', [
      kind,
      id,
    ]);
    return row === undefined ? undefined : toRecord<T>(row);
  }
  async getMany<T>(kind: string, ids: readonly string[]): Promise<Array<StoredRecord<T>>> {
    const rows = await this.db.rowsOpening<RecordRow>(
      'SELECT * FROM {s}.records WHERE kind = $1 AND id = ANY($2::text[]) ORDER BY id',
      [kind, [...ids]],
    );
    return rows.map((row) => toRecord<T>(row));
  }
  async version(kind: string, id: string): Promise<number | undefined> {
    const [row] = await this.db.rowsOpening<{ version: number }>(
      'SELECT version FROM {s}.records WHERE kind = $1 AND id = $2',
      [kind, id],
    );
    return row?.version;
  }
  async list<T>(kind: string, options: ListOptions = {}): Promise<Array<StoredRecord<T>>> {
    const [sql, values] = range('*', kind, options);
    return (await this.db.rows<RecordRow>(sql, values)).map((row) => toRecord<T>(row));
  }
  async versions(kind: string, options: ListOptions = {}): Promise<RecordVersion[]> {
    const [sql, values] = range('id, version', kind, options);
    return this.db.rows<{ id: string; version: number }>(sql, values);
  }
  async liveWork(kind: LiveKind, options: LiveWorkOptions = {}): Promise<LiveWork[]> {
    const [sql, values] = liveWorkQuery(kind, options);
    const rows = await this.db.rows<Record<string, unknown> & { id: string }>(sql, values);
    return rows.map((row) => liveWorkRow(row.id, (field) => row[field]));
  }
  /** One probe: see {@link ANY_DUE_SQL}. */
  async hasDueOccurrences(now: string): Promise<boolean> {
    const [row] = await this.db.rows<{ due: boolean }>(ANY_DUE_SQL, [now]);
    return row!.due;
  }
  timeline(kind: TimelineKind, options: TimelineOptions) {
    return readTimeline(this.db, kind, options);
  }
  timelineCounts(kind: TimelineKind, filter: TimelineFilter) {
    return readTimelineCounts(this.db, kind, filter);
  }
  async head(stream: string): Promise<number> {
    const [row] = await this.db.rows<{ s: number | null }>('SELECT MAX(sequence) AS s FROM {s}.log WHERE stream = $1', [
      stream,
    ]);
    return row?.s === null || row?.s === undefined ? 0 : row.s + 1;
  }
  async readLog<T>(stream: string, options: ReadLogOptions = {}): Promise<Array<LogEntry<T>>> {
    const rows = await this.db.rows<LogRow>(
      'SELECT * FROM {s}.log WHERE stream = $1 AND sequence > $2 ORDER BY sequence LIMIT $3',
      [stream, options.after ?? -1, options.limit ?? null],
    );
    return rows.map((row) => toEntry<T>(row));
  }
  /**
   * Entries below the feed's visibility horizon (see {@link horizonSql}), and the reader's own appends: a
   * position is served only once no transaction that could still commit a lower one is open.
   */
  async readFeed<T>(options: ReadLogOptions = {}): Promise<Array<LogEntry<T>>> {
    const own = this.ownPositions();
    const rows = await this.db.rows<LogRow>(
      `SELECT * FROM {s}.log WHERE position > $1 AND (position < ${horizonSql('$3', '$4')} ` +
        'OR (position >= $5 AND position < $6)) ORDER BY position LIMIT $2',
      [
        options.after ?? -1,
        options.limit ?? null,
        String(this.db.feed.baseXid),
        String(this.db.feed.origin),
        String(own?.[0] ?? -1),
        String(own?.[1] ?? -1),
      ],
    );
    return rows.map((row) => toEntry<T>(row));
  }

  /** The positions this reader's own transaction may hold: none outside a writing transaction. */
  protected ownPositions(): readonly [bigint, bigint] | undefined {
    return undefined;
  }
}

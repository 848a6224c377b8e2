import { redactPublished, redactText } from '../contract/redaction.js';
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import type { TickReport } from '../engine/engine.js';
import { passDurationMs } from './pass-facts.js';

export type LogFormat = 'json' | 'human';

/** Where log lines go: anything with a `write(line)` (a stream, a file destination). Default stdout. */
export interface LogDestination {
  write(chunk: string): unknown;
}

export interface EngineLoggerOptions {
  format?: LogFormat;
  destination?: LogDestination;
  /** The lowest level written (default info). */
  level?: 'debug' | 'info' | 'warn' | 'error';
}

/** A pass logger: the engine's passes and the daemon's own messages. */
export interface EngineLogger {
  /** Logs a pass that did something, or that had failed steps (at warn); idle passes at debug. */
  onPass(report: TickReport): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  /** The pino logger underneath, for a framework that takes one (Fastify's `loggerInstance`). */
  readonly pino: Logger;
}

const LEVEL_NAMES: Record<number, string> = { 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const OWN_KEYS = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'pass', 'at']);

const fieldText = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

/** One JSON record as the human line `start` has always printed: `<at> planned N, …` for passes. */
export function humanLine(record: Record<string, unknown>): string {
  if (record.pass === true) return `${String(record.at)} ${String(record.msg)}`;
  const time = new Date(Number(record.time)).toISOString();
  const level = LEVEL_NAMES[Number(record.level)] ?? String(record.level);
  const fields = Object.entries(record)
    .filter(([key]) => !OWN_KEYS.has(key))
    .map(([key, value]) => ` ${key}=${fieldText(value)}`)
    .join('');
  return `${time} ${level} ${String(record.msg)}${fields}`;
}

/** Turns pino's JSON lines into human lines: pino stays the one logger, only the rendering differs. */
function humanStream(destination: LogDestination): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line !== '') destination.write(`${humanLine(JSON.parse(line) as Record<string, unknown>)}\n`);
      }
      done();
    },
  });
}

function passFields(report: TickReport) {
  return {
    pass: true,
    at: report.at,
    planned: report.planned,
    launched: report.launched,
    settled: report.settled,
    compacted: report.compacted,
    durationMs: Math.round(passDurationMs(report) * 100) / 100,
    ...(report.errors.length === 0 ? {} : { errors: report.errors.map((e) => redactText(e.message)) }),
  };
}

/**
 * A logger on pino: JSON lines (`{"level":30,"time":…,"msg":…}`, one object per line) with `format: 'json'`,
 * human lines by default. A pass reads `<at> planned N, launched N, settled N` in both; the JSON record carries
 * the counts as fields too.
 *
 * @example
 * ```ts
 * const logger = createEngineLogger({ format: 'json' });
 * engine.start((report) => logger.onPass(report));
 * logger.info('daemon listening', { socketPath });
 * ```
 */
export function createEngineLogger(options: EngineLoggerOptions = {}): EngineLogger {
  const destination = options.destination ?? process.stdout;
  const stream = options.format === 'json' ? destination : humanStream(destination);
  const logger = pino(
    { level: options.level ?? 'info', base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.epochTime },
    stream as pino.DestinationStream,
  );
  return {
    pino: logger,
    onPass(report) {
      const errors =
        report.errors.length > 0 ? `, errors: ${redactText(report.errors.map((e) => e.message).join('; '))}` : '';
      const msg = `planned ${report.planned}, launched ${report.launched}, settled ${report.settled}${errors}`;
      if (report.errors.length > 0) logger.warn(passFields(report), msg);
      else if (report.planned + report.launched + report.settled > 0) logger.info(passFields(report), msg);
      else logger.debug(passFields(report), msg);
    },
    // Log lines are a published view: redacted like events and reports.
    info: (message, fields = {}) => logger.info(redactPublished(fields), redactText(message)),
    warn: (message, fields = {}) => logger.warn(redactPublished(fields), redactText(message)),
    error: (message, fields = {}) => logger.error(redactPublished(fields), redactText(message)),
  };
}

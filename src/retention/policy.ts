/** The contract's retention classes (definition `policies.retention`, event `privacy.retention`). */
export type RetentionClass = 'ephemeral' | 'standard' | 'extended' | 'legal_hold';

export const RETENTION_CLASSES: readonly RetentionClass[] = ['ephemeral', 'standard', 'extended', 'legal_hold'];

/**
 * How long settled history of each class is kept, in days (fractions allowed); null keeps it forever.
 *
 * @example
 * ```ts
 * createEngine({ store, runtimes, retention: { windowDays: { standard: 7 } } });
 * ```
 */
export interface RetentionOptions {
  /** Per class; classes left out keep {@link DEFAULT_RETENTION_DAYS}. */
  windowDays?: Partial<Record<RetentionClass, number | null>>;
  /** Most occurrences one pass compacts, so retention never crowds out due work (default 256). */
  perPass?: number;
  /** Engine-clock minutes between retention sweeps; a sweep lists only what expired since (default 5). */
  sweepEveryMinutes?: number;
  /**
   * Days a compacted occurrence's snapshots stay before its streams are retired whole (default 7): until then
   * a command naming it is told it was compacted, with its final state; after, it reads as never there.
   */
  snapshotDays?: number;
  /**
   * Days a command's adoption record is kept after it committed (default 7), and never before what the
   * command started has been retired: a key re-sent within the window replays; after it, it is a new request.
   */
  adoptionWindowDays?: number;
}

/**
 * The contract names the classes but not their lengths; these are this engine's, chosen so a class keeps
 * history for about as long as its name promises. `legal_hold` is never compacted, whatever is configured.
 */
export const DEFAULT_RETENTION_DAYS: Readonly<Record<RetentionClass, number | null>> = {
  ephemeral: 1,
  standard: 30,
  extended: 365,
  legal_hold: null,
};

/** Occurrences compacted per pass by default: a few hundred small transactions, well inside a pass budget. */
const DEFAULT_PER_PASS = 256;
/** Settled history expires on a scale of days; looking every few minutes is prompt enough and nearly free. */
const DEFAULT_SWEEP_MINUTES = 5;
const DAY_MS = 86_400_000;
/** A week: long enough for a client's retries and an operator's look at what retention removed. */
const DEFAULT_SNAPSHOT_DAYS = 7;
const DEFAULT_ADOPTION_WINDOW_DAYS = 7;

function positiveDays(name: string, days: number): number {
  if (!(Number.isFinite(days) && days > 0))
    throw new RangeError(`retention: ${name} must be a positive number of days, not ${String(days)}`);
  return days * DAY_MS;
}

/** A validated retention policy: windows in milliseconds. */
export class RetentionPolicy {
  private constructor(
    private readonly windowsMs: ReadonlyMap<RetentionClass, number | null>,
    readonly perPass: number,
    readonly sweepEveryMs: number,
    /** How long a compacted occurrence's snapshots stay before its streams are retired (ms). */
    readonly snapshotMs: number,
    /** How long an adoption record is kept after its command committed (ms). */
    readonly adoptionWindowMs: number,
  ) {}

  /** Validates options once at the boundary; throws a RangeError naming the bad value. */
  static from(options: RetentionOptions = {}): RetentionPolicy {
    const windows = new Map<RetentionClass, number | null>();
    for (const name of Object.keys(options.windowDays ?? {})) {
      if (!RETENTION_CLASSES.includes(name as RetentionClass))
        throw new RangeError(`retention: unknown class ${JSON.stringify(name)}`);
    }
    for (const name of RETENTION_CLASSES) {
      const days = options.windowDays?.[name] === undefined ? DEFAULT_RETENTION_DAYS[name] : options.windowDays[name]!;
      if (days !== null && !(Number.isFinite(days) && days > 0))
        throw new RangeError(`retention: ${name} must be a positive number of days or null, not ${String(days)}`);
      windows.set(name, name === 'legal_hold' || days === null ? null : days * DAY_MS);
    }
    const perPass = options.perPass ?? DEFAULT_PER_PASS;
    if (!Number.isSafeInteger(perPass) || perPass < 1)
      throw new RangeError(`retention: perPass must be a positive integer, not ${String(perPass)}`);
    const sweep = options.sweepEveryMinutes ?? DEFAULT_SWEEP_MINUTES;
    if (!(Number.isFinite(sweep) && sweep >= 0))
      throw new RangeError(`retention: sweepEveryMinutes must be ≥ 0, not ${String(sweep)}`);
    return new RetentionPolicy(
      windows,
      perPass,
      sweep * 60_000,
      positiveDays('snapshotDays', options.snapshotDays ?? DEFAULT_SNAPSHOT_DAYS),
      positiveDays('adoptionWindowDays', options.adoptionWindowDays ?? DEFAULT_ADOPTION_WINDOW_DAYS),
    );
  }

  /** How long a class is kept (ms), or null: forever. Unknown classes are kept forever, never guessed at. */
  windowMs(name: string): number | null {
    return this.windowsMs.get(name as RetentionClass) ?? null;
  }

  /** True when history of class `a` must outlive history of class `b`. */
  outlives(a: string, b: string): boolean {
    const wa = this.windowMs(a);
    const wb = this.windowMs(b);
    return wb !== null && (wa === null || wa > wb);
  }

  /** The classes with a finite window: the only ones a sweep looks at. */
  expiringClasses(): RetentionClass[] {
    return RETENTION_CLASSES.filter((name) => this.windowsMs.get(name) !== null);
  }
}

import type { EvidenceLocation } from './runtime.js';

/** Who is asking about a launch, and whether another engine could have sent it. */
export interface EvidenceReader {
  /** The asking runtime's location; undefined for a runtime whose evidence every engine reads. */
  here: EvidenceLocation | undefined;
  /**
   * The store may have other engines at once (PostgreSQL): a launch recorded without a location (before
   * locations were recorded) may then have been sent by an engine whose evidence lives elsewhere.
   */
  sharedStore: boolean;
  /** The launch was sent by this very engine instance, through this runtime. */
  ownLaunch: boolean;
}

/**
 * Whether the runtime at `reader.here` can read the evidence of a launch recorded at `recorded`: the same
 * evidence root, and the same host unless the evidence proves liveness by itself. Only then may its answer
 * decide the launch (`never_started` fences and resends; `lost` ends the session's evidence); for any other
 * launch the engine treats the answer as unknown. A launch recorded without a location counts as this
 * runtime's only where no other engine could have sent it: on a single-owner store, or by this engine itself.
 *
 * @example
 * ```ts
 * const here = { host: 'a', root: 'dir:/srv/a/.coven/sessions#5f0c' };
 * evidenceReadable({ here, sharedStore: true, ownLaunch: false }, { host: 'b', root: here.root }); // false
 * evidenceReadable({ here, sharedStore: true, ownLaunch: false }, here); // true
 * ```
 */
export function evidenceReadable(reader: EvidenceReader, recorded: EvidenceLocation | undefined): boolean {
  const { here } = reader;
  if (here === undefined) return true;
  if (recorded === undefined) return !reader.sharedStore || reader.ownLaunch;
  if (recorded.root !== here.root) return false;
  return here.anyHost === true || recorded.host === here.host;
}

/** Where a launch's evidence was recorded, for messages. */
export const describeLocation = (location: EvidenceLocation | undefined): string =>
  location === undefined ? 'an unrecorded location' : `${location.root} on ${location.host}`;

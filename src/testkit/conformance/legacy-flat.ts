/** The fields a legacy flat definition names for itself; everything else takes the conformance files' defaults. */
export interface LegacyFlatFields {
  id: string;
  name: string;
  status: 'ACTIVE' | 'PAUSED';
  prompt: string;
  familiarId?: string;
  cwd?: string;
}

/**
 * A legacy (schemaVersion 1) flat definition as upstream's conformance files write them: due daily at 09:00 UTC,
 * misfire `latest`, overlap `forbid`, a 30-minute timeout, on the `coven-code` runtime.
 *
 * @example
 * ```ts
 * const flat = legacyFlatDefinition({ id: 'daily', name: 'Daily', status: 'PAUSED', prompt: 'Run the routine.' });
 * await commands.handle(envelope('legacy.import.v1', { source: 'flat-definitions', definitions: [flat] }));
 * ```
 */
export function legacyFlatDefinition(fields: LegacyFlatFields) {
  return {
    schemaVersion: 1,
    rrule: 'FREQ=DAILY;BYHOUR=9',
    timezone: 'utc',
    misfire: 'latest',
    overlap: 'forbid',
    timeoutMinutes: 30,
    runtime: 'coven-code',
    ...fields,
  };
}

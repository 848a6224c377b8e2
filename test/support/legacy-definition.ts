/** A legacy (schemaVersion 1) definition `daily`, due every day at 09:00 UTC, as the conformance vectors write them. */
export function legacyDaily(status: 'ACTIVE' | 'PAUSED') {
  return {
    schemaVersion: 1,
    id: 'daily',
    name: 'Daily',
    status,
    rrule: 'FREQ=DAILY;BYHOUR=9',
    timezone: 'utc',
    misfire: 'latest',
    overlap: 'forbid',
    timeoutMinutes: 30,
    runtime: 'coven-code',
    cwd: 'work/proj',
    prompt: 'Run the routine.',
  };
}

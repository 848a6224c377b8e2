import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { formatReports } from '../../src/testkit/conformance/report-format.js';
import { runVector } from '../../src/testkit/conformance/vector-runner.js';
import { upstreamAvailable, upstreamDir } from '../support/upstream.js';

const FOLDERS = [
  'conformance/scenarios/delivery-failures',
  'conformance/scenarios/duplicate-process',
  'conformance/scenarios/restart',
  'conformance/scenarios/runtime-failures',
  'conformance/scenarios/scheduling',
  'conformance/vectors/schedules',
  'conformance/vectors/state-machines',
  'conformance/vectors/events',
  'conformance/vectors/idempotency',
];
const files = upstreamAvailable
  ? FOLDERS.flatMap((folder) =>
      readdirSync(join(upstreamDir, folder))
        .filter((f) => f.endsWith('.json'))
        .map((f) => join(upstreamDir, folder, f)),
    )
  : [];

describe.skipIf(!upstreamAvailable)(
  'upstream scenarios and schedule, state-machine, event and idempotency vectors through the conformance runner',
  () => {
    test.each(files.map((f) => [f.slice(upstreamDir.length + 1), f] as const))('%s', async (_name, file) => {
      const report = await runVector(file);
      console.info(formatReports([report]));
      expect(report.status, JSON.stringify(report.expectations.filter((e) => e.status === 'fail'))).not.toBe('fail');
      // A difference must name its reason; an unsupported expectation must say what is missing.
      for (const e of report.expectations)
        if (e.status === 'differs' || e.status === 'unsupported') expect(e.reason).toBeTruthy();
    });

    test('the schedule vectors and the scheduling scenarios all pass outright', async () => {
      const scheduling = files.filter((f) => f.includes('vectors/schedules') && !f.includes('host-timezone'));
      for (const file of scheduling) expect((await runVector(file)).status, file).toBe('pass');
    });
  },
);

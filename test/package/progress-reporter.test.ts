import { expect, test } from 'vitest';
import type { TestCase, TestModule, TestSpecification } from 'vitest/node';
import ProgressReporter from '../support/progress-reporter.js';

/** A test case as the reporter reads it: an id, its file and its full name. */
const testCase = (id: string, name: string) =>
  ({ id, fullName: name, module: { relativeModuleId: 'test/package/distribution.test.ts' } }) as unknown as TestCase;

test('npm test prints a progress line at least every 20 s, naming the tests that run longest', () => {
  let now = 0;
  let tick: (() => void) | undefined;
  let interval = 0;
  const lines: string[] = [];
  const reporter = new ProgressReporter({
    ports: {
      now: () => now,
      print: (line) => void lines.push(line),
      every: (callback, ms) => {
        tick = callback;
        interval = ms;
        return { stop: () => void (tick = undefined) };
      },
    },
  });
  reporter.onTestRunStart([{}, {}] as unknown as TestSpecification[]);
  expect(interval).toBe(20_000);
  reporter.onTestCaseReady(testCase('a', 'the packed package installs'));
  now = 20_000;
  tick!();
  expect(lines).toEqual([
    '[progress 20 s] 0/2 files done; running: test/package/distribution.test.ts > the packed package installs (20 s)',
  ]);
  reporter.onTestCaseResult(testCase('a', 'the packed package installs'));
  reporter.onTestModuleEnd({} as TestModule);
  now = 40_000;
  tick!();
  expect(lines[1]).toBe('[progress 40 s] 1/2 files done');
  reporter.onTestRunEnd();
  expect(tick).toBeUndefined();
});

import type { Reporter, TestModule } from 'vitest/node';

/** Prints one plain `vitest: N passed, N failed, N skipped` line at the end, which CI reads as the verdict. */
export default class ClosingLineReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const counts = { passed: 0, failed: 0, skipped: 0, pending: 0 };
    for (const module of testModules) {
      for (const test of module.children.allTests()) counts[test.result().state] += 1;
      // A file that failed to load or threw outside its tests counts as a failure too.
      if (module.errors().length > 0) counts.failed += module.errors().length;
    }
    console.log(`vitest: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped + counts.pending} skipped`);
  }
}

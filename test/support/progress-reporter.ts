import type { Reporter, TestCase, TestModule, TestSpecification } from 'vitest/node';

/** What the reporter needs of the outside world; the real clock and console unless a test gives its own. */
export interface ProgressPorts {
  now: () => number;
  print: (line: string) => void;
  every: (callback: () => void, ms: number) => { stop: () => void };
}

const REAL_PORTS: ProgressPorts = {
  now: () => Date.now(),
  print: (line) => console.log(line),
  every: (callback, ms) => {
    const timer = setInterval(callback, ms);
    timer.unref();
    return { stop: () => clearInterval(timer) };
  },
};

/**
 * Prints a progress line at least every `everyMs` (default 20 s) while the suite runs: how many files are done
 * of how many, and the tests running longest, with how long each has run. The default reporter prints a file
 * only once it ends, so a single long test (the packed-package one runs for minutes) was silence before.
 */
export default class ProgressReporter implements Reporter {
  private readonly running = new Map<string, { name: string; since: number }>();
  private done = 0;
  private total = 0;
  private startedAt = 0;
  private ticker: { stop: () => void } | undefined;

  private readonly everyMs: number;
  private readonly ports: ProgressPorts;

  /** Vitest constructs a reporter named by path with no arguments; a test gives its own interval and ports. */
  constructor(options: { everyMs?: number; ports?: ProgressPorts } = {}) {
    this.everyMs = options.everyMs ?? 20_000;
    this.ports = options.ports ?? REAL_PORTS;
  }

  onTestRunStart(specifications: ReadonlyArray<TestSpecification>): void {
    this.total = specifications.length;
    this.startedAt = this.ports.now();
    this.ticker = this.ports.every(() => this.report(), this.everyMs);
  }

  onTestCaseReady(test: TestCase): void {
    this.running.set(test.id, { name: `${test.module.relativeModuleId} > ${test.fullName}`, since: this.ports.now() });
  }

  onTestCaseResult(test: TestCase): void {
    this.running.delete(test.id);
  }

  onTestModuleEnd(_module: TestModule): void {
    this.done += 1;
  }

  onTestRunEnd(): void {
    this.ticker?.stop();
    this.ticker = undefined;
  }

  private report(): void {
    const now = this.ports.now();
    const seconds = (since: number) => Math.round((now - since) / 1000);
    const longest = [...this.running.values()].sort((a, b) => a.since - b.since).slice(0, 3);
    const tests = longest.map((t) => `${t.name} (${seconds(t.since)} s)`).join('; ');
    this.ports.print(
      `[progress ${seconds(this.startedAt)} s] ${this.done}/${this.total} files done` +
        (tests === '' ? '' : `; running: ${tests}`),
    );
  }
}

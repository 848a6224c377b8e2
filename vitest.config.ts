import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node',
    // Tests keep no module-level state; sharing one module graph cuts the suite's start-up cost on 2 cores.
    isolate: false,
    // A progress line at least every 20 s: a long test (the packed-package one) is otherwise minutes of silence.
    reporters: ['default', './test/support/progress-reporter.ts', './test/support/closing-line-reporter.ts'],
    // A throwaway PostgreSQL cluster for the PostgreSQL tests, when the server binaries are installed.
    globalSetup: ['./test/support/postgres-global-setup.ts'],
  },
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { packagesAmong, watchModules } from '../support/loaded-modules.js';

// `import 'coven-automata'` is the engine only: the testkit's property-testing and graph-walking libraries,
// the CLI's diagram renderer and inspector, the test runner and the SQLite and PostgreSQL drivers load only
// where they are used. Each case runs in a fresh Node process (see watchModules), since this runner's graph
// holds them all.
const HEAVY = [
  'fast-check',
  '@xstate/graph',
  '@viz-js/viz',
  '@statelyai/inspect',
  'vitest',
  '@fast-check/vitest',
  'better-sqlite3',
  'fastify',
  'pino',
  'prom-client',
  'pg',
  '@opentelemetry/api',
];
/** The project modules the CLI imports only when their command runs. */
const LAZY = /\/src\/testkit\/|\/src\/cli\/(diagram|inspect|invariants)-command\.ts$/;
const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

interface CliRun {
  urls: string[];
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs one CLI command line in a fresh process through the run-cli fixture. */
function cli(args: string[], deny: string[] = []): CliRun {
  const watch = watchModules(['test/package/fixtures/run-cli.ts'], {
    deny,
    env: { CLI_FIXTURE_ARGS: JSON.stringify(args), NO_COLOR: '1' },
  });
  const lines = watch.stdout.split('\n').filter(Boolean);
  return { urls: watch.urls, ...(JSON.parse(lines.at(-1)!) as Omit<CliRun, 'urls'>) };
}

function scratchStore(): string {
  const dir = mkdtempSync(join(tmpdir(), 'light-import-'));
  dirs.push(dir);
  return join(dir, 'store.json');
}

test("import 'coven-automata' loads the engine and none of the heavy or test packages", () => {
  const { urls } = watchModules(['src/index.ts']);
  // The watch saw the whole graph: the engine and the generated machines are there.
  expect(urls.some((url) => url.endsWith('/src/engine/engine.ts'))).toBe(true);
  expect(urls.some((url) => url.endsWith('/machines/states.ts'))).toBe(true);
  expect(urls.some((url) => url.includes('/node_modules/xstate/'))).toBe(true);
  expect(packagesAmong(urls, HEAVY)).toEqual([]);
  expect(urls.filter((url) => /\/src\/(testkit|cli)\//.test(url))).toEqual([]);
}, 60_000);

test("import 'coven-automata/testkit' loads the suite's libraries (so the watch would see them)", () => {
  const { urls } = watchModules(['src/testkit/index.ts']);
  expect(packagesAmong(urls, HEAVY)).toEqual(['fast-check', '@xstate/graph']);
}, 60_000);

test('the light entry exports the typed state constants and no suite', async () => {
  const engine = await import('../../src/index.js');
  expect(engine.OccurrenceState.running).toBe('running');
  expect(engine.isRunTerminal('ambiguous')).toBe(true);
  expect(engine.OutboxState.pending).toBe('pending');
  for (const name of ['runInvariantSuite', 'runSelfCheck', 'BROKEN_VARIANTS', 'INVARIANTS', 'runVector'])
    expect(Object.keys(engine)).not.toContain(name);
  const testkit = await import('../../src/testkit/index.js');
  expect(typeof testkit.runInvariantSuite).toBe('function');
  expect(testkit.INVARIANTS.filter((check) => check.source === 'contract')).toHaveLength(10);
  expect(testkit.BROKEN_VARIANTS.length).toBeGreaterThan(0);
});

test('CLI read commands load none of the diagram, inspector, suite or conformance code', () => {
  const store = scratchStore();
  // Reads refuse a missing store, so the store is made first.
  expect(cli(['--store', store, 'init']).exitCode).toBe(0);
  for (const args of [['--store', store, 'list'], ['--store', store, 'occurrences'], ['machines']]) {
    const run = cli(args);
    expect(run.exitCode, run.stderr).toBe(0);
    expect(packagesAmong(run.urls, HEAVY)).toEqual([]);
    expect(run.urls.filter((url) => LAZY.test(url))).toEqual([]);
  }
}, 120_000);

test('diagram loads @viz-js/viz when it runs', () => {
  const run = cli(['diagram', '--check']);
  expect(run.stdout + run.stderr).toMatch(/diagrams match the spec|stale diagrams/);
  expect(packagesAmong(run.urls, HEAVY)).toEqual(['@viz-js/viz']);
  expect(run.urls.filter((url) => LAZY.test(url)).map((url) => url.replace(/^.*\/src\//, ''))).toEqual([
    'cli/diagram-command.ts',
  ]);
}, 60_000);

test('without the optional packages, diagram and inspect fail with one line naming what to install', () => {
  const diagram = cli(['diagram', '--check'], ['@viz-js/viz']);
  expect(diagram.exitCode).toBe(1);
  expect(diagram.stderr).toBe(
    'diagram needs the optional package @viz-js/viz, which is not installed: npm install @viz-js/viz',
  );
  const inspect = cli(['inspect', '--no-wait', '--port', '0'], ['@statelyai/inspect']);
  expect(inspect.exitCode).toBe(1);
  expect(inspect.stderr).toBe(
    'inspect needs the optional package @statelyai/inspect, which is not installed: npm install @statelyai/inspect',
  );
  expect(inspect.stdout).toBe('');
  expect(packagesAmong([...diagram.urls, ...inspect.urls], HEAVY)).toEqual([]);
}, 120_000);

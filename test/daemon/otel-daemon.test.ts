import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, expect, test } from 'vitest';
import { traceIdOf } from '../../src/runtime/trace-context.js';
import { eventually } from '../support/eventually.js';
import { killChildren, runCliProcess, startDaemonProcess, writeDefinition } from './daemon-process.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-otel-daemon-'));
afterEach(killChildren);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SETUP = pathToFileURL(resolve('test/support/otel-file-exporter.mjs')).href;

test('start --otel: a run-now through the daemon is one trace of spans in the SDK the operator registered', async () => {
  const folder = mkdtempSync(join(dir, 'store-'));
  const store = join(folder, 'automations.json');
  const spans = join(folder, 'spans.txt');
  const daemon = await startDaemonProcess(store, ['--otel'], undefined, {
    NODE_OPTIONS: `--import=${SETUP}`,
    COVEN_TEST_SPANS: spans,
  });
  expect(daemon.stdout()).toMatch(/^OpenTelemetry: spans go to the global tracer provider$/m);
  const cli = (...args: string[]) => runCliProcess(['--store', store, ...args]);
  expect((await cli('apply', '-f', writeDefinition(folder, 'nightly'))).code).toBe(0);
  expect((await cli('activate', 'nightly')).code).toBe(0);
  const ran = await cli('--json', 'run-now', 'nightly');
  expect(ran.code, ran.stderr).toBe(0);
  const occurrenceId = (JSON.parse(ran.stdout) as { result: { occurrenceId: string } }).result.occurrenceId;
  // The command's plan and claim, its launch, and the daemon's passes observing `true` exit and settling it.
  const names = await eventually(async () => {
    const lines = existsSync(spans) ? readFileSync(spans, 'utf8').trim().split('\n') : [];
    const seen = lines.map((line) => line.split(' ')) as Array<[string, string]>;
    return seen.some(([name]) => name === 'coven.settle') ? seen : undefined;
  }, 30_000);
  expect(names.map(([name]) => name).sort()).toEqual([
    'coven.claim',
    'coven.dispatch',
    'coven.plan',
    'coven.run',
    'coven.settle',
  ]);
  for (const [, traceId] of names) expect(traceId).toBe(traceIdOf(occurrenceId));
  daemon.child.kill('SIGINT');
  expect(await daemon.exited).toBe(0);
}, 120_000);

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, expect, test } from 'vitest';
import { DaemonClient, type StreamedEvent } from '../../src/daemon/index.js';
import { command, definitionBody } from '../support/commands.js';
import { killChildren, startDaemonProcess } from './daemon-process.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-daemon-latency-'));
afterEach(killChildren);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const COMMITS = 60;
const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;

test(`a follower sees another process's commits live: commit→follower latency over ${COMMITS} commits`, async () => {
  const store = join(mkdtempSync(join(dir, 'store-')), 'automations.json');
  await startDaemonProcess(store);
  const client = (await DaemonClient.connect(store))!;
  expect(client).toBeInstanceOf(DaemonClient);
  const controller = new AbortController();
  // The follower: the daemon's SSE stream, read by this process while the daemon process commits.
  const seen = new Map<string, { at: number; position: number }>();
  let waiting: (() => void) | undefined;
  const following = (async () => {
    for await (const { position, event } of client.events({
      after: -1,
      signal: controller.signal,
    }) as AsyncIterable<StreamedEvent>) {
      const key = event.causation?.adoptionKey;
      if (key !== undefined) seen.set(key, { at: performance.now(), position });
      waiting?.();
    }
  })();
  const until = async (key: string, deadlineMs = 5_000) => {
    const deadline = performance.now() + deadlineMs;
    while (!seen.has(key)) {
      if (performance.now() > deadline) throw new Error(`the follower never saw ${key}`);
      await new Promise<void>((wake) => {
        waiting = wake;
        setTimeout(wake, 50);
      });
    }
    return seen.get(key)!;
  };
  const warmUp = command('definition.create.v1', { definition: definitionBody('warm-up') });
  expect((await client.handle(warmUp)).outcome).toBe('committed');
  await until(warmUp.adoptionKey);
  const latencies: number[] = [];
  const positions: number[] = [];
  for (let i = 0; i < COMMITS; i++) {
    const envelope = command('definition.create.v1', { definition: definitionBody(`job-${i}`) });
    // From before the command is sent (an upper bound of commit→follower) to the follower's receipt.
    const sent = performance.now();
    expect((await client.handle(envelope)).outcome).toBe('committed');
    const { at, position } = await until(envelope.adoptionKey);
    latencies.push(at - sent);
    positions.push(position);
  }
  controller.abort();
  await following;
  const sorted = [...latencies].sort((a, b) => a - b);
  const median = percentile(sorted, 0.5);
  const p95 = percentile(sorted, 0.95);
  console.log(
    `commit→follower over ${COMMITS} commits: median ${median.toFixed(1)} ms, p95 ${p95.toFixed(1)} ms, ` +
      `max ${sorted.at(-1)!.toFixed(1)} ms`,
  );
  // Positions are the global feed's, one per created definition, in commit order.
  expect(positions).toEqual([...positions].sort((a, b) => a - b));
  expect(new Set(positions).size).toBe(COMMITS);
  expect(p95).toBeLessThanOrEqual(50);
}, 60_000);

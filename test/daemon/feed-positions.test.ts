import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import type { ReadPage } from '../../src/changefeed/changefeed.js';
import { validateAgainst } from '../../src/contract/schemas.js';
import { createEngine } from '../../src/engine/engine.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { openStore } from '../../src/store/open-store.js';
import { startDaemon } from '../../src/daemon/index.js';
import { runCli } from '../support/run-cli.js';
import { writeDefinition } from './daemon-process.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-feed-positions-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Two automations applied one after the other: `second`'s sequences (0, 1) differ from its feed positions. */
async function twoAutomations(): Promise<string> {
  const folder = mkdtempSync(join(dir, 'store-'));
  const store = join(folder, 'automations.json');
  for (const id of ['first', 'second'])
    expect((await runCli('--store', store, 'apply', '-f', writeDefinition(folder, id))).code).toBe(0);
  return store;
}

const cursors = (out: string) => out.split('\n').map((line) => Number(line.trim().split(' ')[0]));

/** What `events` prints, paged and as --json, on the feed and on one stream. */
async function printed(store: string) {
  const json = async (...args: string[]) =>
    (JSON.parse((await runCli('--store', store, '--json', 'events', ...args)).out) as { result: ReadPage }).result;
  return {
    feed: (await runCli('--store', store, 'events')).out,
    afterTwo: (await runCli('--store', store, 'events', '--after', '2')).out,
    stream: (await runCli('--store', store, 'events', '--stream', 'automation/second')).out,
    feedPage: await json(),
    streamPage: await json('--stream', 'automation/second'),
  };
}

describe('events without --follow prints the cursor --after takes', () => {
  test('on the feed every line starts with its global position; --after resumes right after it', async () => {
    const { feed, afterTwo, stream } = await printed(await twoAutomations());
    expect(cursors(feed)).toEqual([0, 1, 2, 3]);
    expect(feed.split('\n')[2]).toMatch(/^\s+2 \S+Z automation\/second definition\.created:/);
    expect(feed.split('\n')[3]).toMatch(/^\s+3 \S+Z automation\/second definition\.revised:/);
    expect(afterTwo).toMatch(/^\s+3 \S+Z automation\/second definition\.revised:[^\n]*$/);
    // On a stream the cursor is the stream's own sequence, as --follow prints it there.
    expect(cursors(stream)).toEqual([0, 1]);
  });

  test('events.read pages carry the store positions beside envelopes that stay exactly the contract', async () => {
    const { feedPage, streamPage } = await printed(await twoAutomations());
    expect(feedPage.positions).toEqual([0, 1, 2, 3]);
    expect(feedPage.events.map((e) => e.sequence)).toEqual([0, 1, 0, 1]);
    expect(streamPage.positions).toEqual([2, 3]);
    expect(streamPage.nextAfter).toBe(1);
    for (const event of [...feedPage.events, ...streamPage.events]) {
      expect(validateAgainst('event-envelope.schema.json', event).problems).toEqual([]);
      expect(Object.keys(event)).not.toContain('position');
    }
  });

  test('through a running daemon the lines are the same as from the store itself', async () => {
    const store = await twoAutomations();
    const local = await printed(store);
    const opened = await openStore(store);
    const engine = createEngine({ store: opened, runtimes: [new SimulatedRuntime()] });
    const daemon = await startDaemon({ engine, store: opened, storeFile: opened.file });
    try {
      const remote = await printed(store);
      expect([remote.feed, remote.afterTwo, remote.stream]).toEqual([local.feed, local.afterTwo, local.stream]);
      expect(remote.feedPage.positions).toEqual(local.feedPage.positions);
    } finally {
      await daemon.close();
      await opened.close();
    }
  });
});

import { expect, test } from 'vitest';
import type pg from 'pg';
import { CommitNotifier } from '../../src/store/postgres/commit-notifier.js';
import type { Connection } from '../../src/store/postgres/connection.js';

/** A listening connection whose announcements are held on the wire until released, each payload written down. */
function heldWire() {
  const sent: string[] = [];
  const releases: Array<() => void> = [];
  const client = {
    query: (_text: string, values: string[]) => {
      sent.push(values[1]!);
      return new Promise<void>((resolve) => releases.push(resolve));
    },
  };
  return { client: client as unknown as pg.Client, sent, release: () => releases.shift()?.() };
}

function listeningNotifier(client: pg.Client): CommitNotifier {
  const notifier = new CommitNotifier({
    driver: undefined as never,
    url: '',
    schema: 'coven',
    pollMs: 1000,
    applicationName: 'test',
    feedPosition: () => Promise.resolve(0),
    outsideCommit: () => undefined,
  });
  // As if its listening connection were up (connect() sets it); announcements then go out on it.
  (notifier as unknown as { client: pg.Client }).client = client;
  return notifier;
}

const until = async (condition: () => boolean) => {
  const deadline = Date.now() + 5000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met within 5 s');
    await new Promise((resolve) => setImmediate(resolve));
  }
};

const noConnection = undefined as unknown as Connection;

test('commits folded while an announcement is on the wire are announced routine only if every one was', async () => {
  const wire = heldWire();
  const notifier = listeningNotifier(wire.client);
  const routine = `${notifier.origin}:routine`;
  await notifier.announce(noConnection, true);
  await until(() => wire.sent.length === 1);
  await notifier.announce(noConnection, false);
  await notifier.announce(noConnection, true);
  wire.release();
  await until(() => wire.sent.length === 2);
  await notifier.announce(noConnection, true);
  wire.release();
  await until(() => wire.sent.length === 3);
  wire.release();
  expect(wire.sent).toEqual([routine, notifier.origin, routine]);
});

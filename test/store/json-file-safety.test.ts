import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { rename } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { JsonFileStore } from '../../src/store/json/index.js';
import { packageRoot } from '../../src/contract/package-root.js';
import { StoreCorruptError, StoreLockedError } from '../../src/store/store.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-json-safety-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;
const freshFile = () => join(dir, `store-${counter++}.json`);
const root = packageRoot();

function startChild(file: string, mode: 'loop' | 'hold'): ChildProcessWithoutNullStreams {
  // One process (node with tsx as a loader), so the pid we kill is the pid holding the lock.
  return spawn(process.execPath, ['--import', 'tsx', join(root, 'test/store/fixtures/commit-loop.ts'), file, mode], {
    cwd: root,
  });
}

/** Resolves with the child's stdout lines once `until` accepts them. */
function waitForOutput(child: ChildProcessWithoutNullStreams, until: (lines: string[]) => boolean): Promise<string[]> {
  return new Promise((resolve, reject) => {
    let text = '';
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const lines = text.split('\n').filter((l) => l !== '');
      if (until(lines)) resolve(lines);
    });
    child.on('exit', (code) => reject(new Error(`child exited (${String(code)}) early: ${stderr}`)));
  });
}

/** Kills the child and resolves once its output streams are closed, so every line it printed was read. */
function killed(child: ChildProcessWithoutNullStreams): Promise<void> {
  return new Promise((resolve) => {
    child.removeAllListeners('exit');
    child.on('close', () => resolve());
    child.kill('SIGKILL');
  });
}

async function seed(file: string): Promise<void> {
  const store = await JsonFileStore.open(file);
  await store.transact((tx) => tx.put('definition', 'a', { n: 1 }, { expectedVersion: null }));
  await store.close();
}

describe('JSON file store safety', () => {
  test('a second opener in the same process is refused, naming the holder', async () => {
    const file = freshFile();
    const store = await JsonFileStore.open(file);
    try {
      const error = await JsonFileStore.open(file).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreLockedError);
      expect((error as Error).message).toContain(`in use by process ${process.pid}`);
    } finally {
      await store.close();
    }
    const again = await JsonFileStore.open(file);
    await again.close();
  });

  test('a second process is refused with a clear message while the first keeps committing', async () => {
    const file = freshFile();
    const holder = startChild(file, 'hold');
    try {
      await waitForOutput(holder, (lines) => lines.includes('open'));
      const error = await JsonFileStore.open(file).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreLockedError);
      expect((error as StoreLockedError).toEnvelope()).toMatchObject({
        code: 'CONCURRENCY_LIMIT',
        httpStatus: 429,
        retryable: true,
      });
      expect((error as Error).message).toMatch(new RegExp(`in use by process ${holder.pid!} on `));
    } finally {
      await killed(holder);
    }
  });

  test('a lock left by a SIGKILLed process is taken over at once', async () => {
    const file = freshFile();
    const holder = startChild(file, 'hold');
    await waitForOutput(holder, (lines) => lines.includes('open'));
    await killed(holder);
    const store = await JsonFileStore.open(file);
    await store.close();
  });

  test.each([
    ['garbage', 'this is not json'],
    [
      'a truncated file',
      '{"format":"coven-automata/json-store","formatVersion":1,"records":{"definition":{"a":{"version":1,',
    ],
    ['a foreign JSON file', '{"users":[]}'],
    ['an unknown format version', '{"format":"coven-automata/json-store","formatVersion":99,"records":{},"log":[]}'],
    [
      'a gap in a stream',
      '{"format":"coven-automata/json-store","formatVersion":1,"records":{},"log":[{"stream":"s","sequence":1,"data":{}}]}',
    ],
  ])('%s is refused with a clear error and left byte-identical', async (_what, content) => {
    const file = freshFile();
    writeFileSync(file, content);
    const error = await JsonFileStore.open(file).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreCorruptError);
    expect((error as Error).message).toContain(`store file ${file} cannot be used`);
    expect((error as StoreCorruptError).toEnvelope()).toMatchObject({ code: 'INTERNAL', httpStatus: 500 });
    expect(readFileSync(file, 'utf8')).toBe(content);
    // The refused open released its lock: once repaired, the file opens.
    rmSync(file);
    await (await JsonFileStore.open(file)).close();
  });

  test('a crash while folding the journal into the snapshot loses nothing: the old snapshot and the journal hold every commit', async () => {
    const file = freshFile();
    await seed(file);
    const before = readFileSync(file, 'utf8');
    let crash = true;
    const store = await JsonFileStore.open(file, {
      compactAtBytes: 0,
      files: {
        rename: async (from, to) => {
          if (crash) throw new Error('simulated crash before rename');
          await rename(from, to);
        },
      },
    });
    // The commit is durable in the journal before the fold is tried, so it succeeds although the fold failed.
    await store.transact((tx) => tx.put('definition', 'a', { n: 2 }, { expectedVersion: 1 }));
    await store.foldSettled();
    expect(readFileSync(file, 'utf8')).toBe(before);
    expect((await store.read((r) => r.get<{ n: number }>('definition', 'a')))?.data.n).toBe(2);
    crash = false;
    await store.transact((tx) => tx.put('definition', 'a', { n: 3 }, { expectedVersion: 2 }));
    // The fold runs after the commit is answered, while later commits go on.
    await store.foldSettled();
    expect(readFileSync(file, 'utf8')).not.toBe(before);
    // Only its header is left, naming the generation the new snapshot names.
    expect(readFileSync(`${file}.journal`, 'utf8')).toMatch(
      /^\{"journal":"coven-automata\/json-journal","storeId":"[^"]+","generation":\d+,"checksums":"crc32"\}\n$/,
    );
    await store.close();
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    const reopened = await JsonFileStore.open(file);
    expect(await reopened.read((r) => r.get<{ n: number }>('definition', 'a'))).toMatchObject({
      version: 3,
      data: { n: 3 },
    });
    await reopened.close();
  });

  test('SIGKILL in the middle of a stream of commits: reopening yields the last committed state, nothing half-written', async () => {
    const file = freshFile();
    for (const stopAfter of [5, 40, 120]) {
      const child = startChild(file, 'loop');
      let printed = '';
      child.stdout.on('data', (chunk: Buffer) => (printed += chunk.toString()));
      await waitForOutput(child, (l) => Number(l[l.length - 1]) >= stopAfter);
      await killed(child);
      // The child goes on committing until the kill lands: count every acknowledgement it printed before dying.
      const acknowledged = Number(
        printed
          .split('\n')
          .filter((l) => l !== '')
          .at(-1),
      );
      const store = await JsonFileStore.open(file);
      try {
        await store.read(async (r) => {
          const c = await r.get<{ n: number }>('counter', 'c');
          const log = await r.readLog<{ n: number }>('counter/c');
          const items = await r.list('item');
          // A commit may become durable just before its acknowledgement is printed; never after, never half.
          expect(
            c!.data.n === acknowledged || c!.data.n === acknowledged + 1,
            `counter ${c!.data.n} vs acknowledged ${acknowledged}`,
          ).toBe(true);
          expect(log.length).toBe(c!.data.n);
          expect(items.length).toBe(c!.data.n);
          expect(c!.version).toBe(c!.data.n);
          expect(log.map((e) => e.data.n)).toEqual(Array.from({ length: c!.data.n }, (_, i) => i + 1));
        });
      } finally {
        await store.close();
      }
      // The next child resumes from the committed state, so each round starts where the last one died.
      expect(existsSync(file)).toBe(true);
    }
  }, 60_000);
});

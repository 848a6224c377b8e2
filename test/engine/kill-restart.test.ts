import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { packageRoot } from '../../src/contract/package-root.js';
import { openStore } from '../../src/store/open-store.js';
import { verifyIntegrity } from '../../src/contract/digest.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-kill-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const root = packageRoot();

/** Runs the engine process until it prints `done` or until its `killAfter`-th commit, when it is SIGKILLed. */
function runEngine(
  file: string,
  sessions: string,
  at: string,
  killAfter?: number,
): Promise<{ killed: boolean; done?: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(root, 'test/engine/fixtures/engine-process.ts'), file, sessions, at],
      { cwd: root },
    );
    let commits = 0;
    let done: string | undefined;
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.stdout.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) {
        if (line === 'commit') commits += 1;
        if (line.startsWith('done')) done = line;
        if (killAfter !== undefined && commits >= killAfter && !child.killed) child.kill('SIGKILL');
      }
    });
    child.on('exit', (code, signal) => {
      if (signal === 'SIGKILL') resolve({ killed: true });
      else if (code === 0) resolve({ killed: false, ...(done === undefined ? {} : { done }) });
      else reject(new Error(`engine process exited ${String(code)}: ${stderr}`));
    });
  });
}

test.each(['store.json', 'store.sqlite'])(
  'SIGKILL at successive commit points on %s, then restart: nothing lost, nothing launched twice, receipts verify',
  async (storeFile) => {
    // A clean run commits about ten times (setup, the owner lease, plan, claim, dispatch, release, launch answer,
    // settlement); each kill point lands at a different one, and one past the last leaves a clean run.
    for (const killAfter of [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]) {
      const round = mkdtempSync(join(dir, `round-${killAfter}-`));
      const file = join(round, storeFile);
      const sessions = join(round, 'sessions');
      const results = [await runEngine(file, sessions, '2026-03-02T09:00:00.000Z', killAfter)];
      // Restart at the slot; if the kill left a launch unconfirmed, restart again after its lease expired.
      if (results[0]!.killed) results.push(await runEngine(file, sessions, '2026-03-02T09:00:00.000Z', 1_000));
      if (results.at(-1)!.done === undefined) results.push(await runEngine(file, sessions, '2026-03-02T10:00:01.000Z'));
      const result = results.at(-1)!;
      console.info(`kill after ${killAfter} commits: ${JSON.stringify(results)}`);
      expect(result.done, `kill after ${killAfter} commits`).toMatch(/^done (succeeded|recovery_required)$/);

      const launchedKeys = existsSync(sessions)
        ? readdirSync(sessions)
            .filter((f) => f.endsWith('.json'))
            .map((f) => (JSON.parse(readFileSync(join(sessions, f), 'utf8')) as { sessionKey: string }).sessionKey)
        : [];
      expect(new Set(launchedKeys).size, `kill after ${killAfter}`).toBe(launchedKeys.length);
      expect(launchedKeys.length).toBeLessThanOrEqual(1);

      const store = await openStore(file);
      try {
        const feed = await store.read((r) => r.readFeed());
        const byStream = new Map<string, number[]>();
        for (const entry of feed) byStream.set(entry.stream, [...(byStream.get(entry.stream) ?? []), entry.sequence]);
        for (const sequences of byStream.values()) expect(sequences).toEqual(sequences.map((_, i) => i));
        const occurrences = await store.read((r) => r.list<{ snapshot: { value: string } }>('occurrence'));
        expect(occurrences).toHaveLength(1);
        if (occurrences[0]!.data.snapshot.value === 'succeeded') {
          expect(launchedKeys).toHaveLength(1);
          const receipts = await store.read((r) => r.list<Record<string, unknown>>('receipt'));
          expect(receipts.map((r) => verifyIntegrity(r.data).valid)).toEqual([true]);
        }
      } finally {
        await store.close();
      }
    }
  },
  300_000,
);

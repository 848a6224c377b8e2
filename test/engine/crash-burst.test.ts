import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import fc from 'fast-check';
import { packageRoot } from '../../src/contract/package-root.js';
import { openStore } from '../../src/store/open-store.js';
import { KINDS } from '../../src/domain/records.js';

// CI size by default; COVEN_STRESS=1 runs the size (1,000 at once, more rounds).
const STRESS = process.env.COVEN_STRESS === '1';
const COUNT = STRESS ? 1000 : 40;
const ROUNDS = STRESS ? Number(process.env.COVEN_STRESS_ROUNDS ?? 5) : 2;
const RECOVERY_BOUND_MS = 10_000;
const seed = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
console.info(
  `[property] crash-burst: seed=${seed} rounds=${ROUNDS} count=${COUNT}${STRESS ? '' : ' (CI size; COVEN_STRESS=1 for 1,000 at once)'}`,
);

const dir = mkdtempSync(join(tmpdir(), 'coven-burst-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const root = packageRoot();

interface Outcome {
  killed: boolean;
  /** When everything the killed process left undecided was decided, and how many occurrences that was. */
  recoveredMs?: number;
  leftUndecided?: number;
  settledMs?: number;
  openMs?: number;
  states?: Record<string, number>;
  line?: string;
}

/**
 * Runs the burst process; SIGKILLs it once `killAfter` launches were handed to the runtime (0: at the burst's
 * first commit), so every kill lands inside the burst, whatever the store groups into one commit.
 */
function runBurst(file: string, killAfter?: number): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        join(root, 'test/engine/fixtures/burst-process.ts'),
        file,
        join(file, '..', 'sessions'),
        String(COUNT),
      ],
      { cwd: root },
    );
    let commits = 0;
    let launches = 0;
    let bursting = false;
    let outcome: Outcome = { killed: false };
    let stderr = '';
    let pending = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.stdout.on('data', (chunk: Buffer) => {
      const lines = (pending + chunk.toString()).split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        if (line === 'burst') bursting = true;
        if (line === 'commit' && bursting) commits += 1;
        if (line === 'launching') launches += 1;
        const recovered = /^recovered (\d+) (\d+)$/.exec(line);
        if (recovered !== null)
          outcome = { ...outcome, recoveredMs: Number(recovered[1]), leftUndecided: Number(recovered[2]) };
        const settled = /^settled (\d+) (\d+) (.*)$/.exec(line);
        if (settled !== null)
          outcome = {
            ...outcome,
            settledMs: Number(settled[1]),
            openMs: Number(settled[2]),
            states: JSON.parse(settled[3]!) as Record<string, number>,
          };
        if (line.startsWith('unsettled')) outcome = { killed: false, line };
        const due = killAfter === 0 ? commits > 0 : launches >= (killAfter ?? Infinity);
        if (killAfter !== undefined && due && !child.killed) child.kill('SIGKILL');
      }
    });
    child.on('exit', (code, signal) => {
      if (signal === 'SIGKILL') resolve({ killed: true });
      else if (code === 0) resolve(outcome);
      else reject(new Error(`burst process exited ${String(code)}: ${stderr}`));
    });
  });
}

const killPoints = fc.sample(fc.integer({ min: 0, max: COUNT - 1 }), { seed, numRuns: ROUNDS * 2 });

test.each(['burst.json', 'burst.sqlite'])(
  'SIGKILL mid-burst on %s, then restart with the same requests: no duplicate launch, no lost request, left-over work decided within 10 s',
  async (storeFile) => {
    const offset = storeFile.endsWith('.json') ? 0 : ROUNDS;
    for (let round = 0; round < ROUNDS; round++) {
      const killAfter = killPoints[offset + round]!;
      const roundDir = mkdtempSync(join(dir, `round-${round}-`));
      const file = join(roundDir, storeFile);
      const first = await runBurst(file, killAfter);
      expect(first.killed, 'the kill landed inside the burst').toBe(true);
      const restart = await runBurst(file);
      console.info(
        `${storeFile} round ${round}: killed after ${killAfter} launches; restart ${JSON.stringify(restart)}`,
      );
      expect(restart.line, 'every occurrence settles after the restart').toBeUndefined();
      // What the killed engine left undecided is decided within the bound; requests it never committed are new work.
      expect
        .soft(restart.recoveredMs, `left-over work decided within ${RECOVERY_BOUND_MS} ms of the store opening`)
        .toBeLessThan(RECOVERY_BOUND_MS);
      expect(restart.settledMs, 'every request settles').toBeDefined();

      const ran = existsSync(join(roundDir, 'ran.log'))
        ? readFileSync(join(roundDir, 'ran.log'), 'utf8').split('\n').filter(Boolean)
        : [];
      expect(ran.length, 'no occurrence ran twice').toBe(new Set(ran).size);
      expect(existsSync(join(roundDir, 'refused.log')), 'no run-now was refused').toBe(false);
      const store = await openStore(file);
      try {
        const occurrences = await store.read((r) =>
          r.list<{ snapshot: { value: string }; attributes: { stateReason?: string } }>(KINDS.occurrence),
        );
        expect(occurrences, 'every request made exactly one occurrence').toHaveLength(COUNT);
        for (const o of occurrences) {
          if (o.data.snapshot.value === 'succeeded') expect(ran).toContain(o.id);
          if (o.data.snapshot.value === 'recovery_required') expect(o.data.attributes.stateReason ?? '').not.toBe('');
        }
      } finally {
        await store.close();
      }
    }
  },
  STRESS ? 1_800_000 : 240_000,
);

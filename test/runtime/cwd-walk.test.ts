import { mkdirSync, mkdtempSync, readFileSync, realpathSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterAll, describe, expect, test } from 'vitest';
import { defaultRequirements } from '../../src/command-handler/context.js';
import { confineCwd } from '../../src/command-handler/cwd-requirements.js';
import type { AutomationDefinition } from '../../src/domain/definition-body.js';
import { ChildProcessRuntime } from '../../src/runtime/child-process-runtime.js';
import { CwdRefusedError, CwdRoots } from '../../src/runtime/cwd-roots.js';
import type { Observation } from '../../src/runtime/runtime.js';
import { eventually } from '../support/eventually.js';
import { launchRequests } from '../support/launch-request.js';

// Issue 36 §3: `missing/../outlink` passed the real-path check (the missing component made it fall back to a
// lexical join, which cancelled `missing/..`) and the kernel then ran the session where `outlink` leads.
const dir = realpathSync(mkdtempSync(join(tmpdir(), 'coven-cwd-walk-')));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const root = join(dir, 'root');
const outside = join(dir, 'outside');
mkdirSync(join(root, 'work'), { recursive: true });
mkdirSync(join(outside, 'inside'), { recursive: true });
symlinkSync(outside, join(root, 'outlink'));
const sessionsDir = join(dir, 'sessions');
const now = new Date('2026-03-02T09:00:00.000Z');
const request = launchRequests((n) => `walk-${n}`);
const runtime = new ChildProcessRuntime({ runtimeId: 'sh', command: 'pwd -P', sessionsDir, cwdRoots: [root] });

const definition = (cwd: string) =>
  ({
    automationId: 'daily',
    action: { variant: 'familiarInvocation', version: 1, prompt: 'p', cwd },
    binding: { familiarBindingPolicy: 'exact', familiarId: 'charm', authority: { approvalPolicyRef: 'policy://x' } },
    runtimeRequirements: { runtimeId: 'sh', capabilities: [] },
  }) as unknown as AutomationDefinition;
const activation = confineCwd([runtime], defaultRequirements(['sh']));
function activationError(cwd: string): unknown {
  try {
    activation(definition(cwd));
  } catch (error) {
    return error;
  }
  return undefined;
}

/** Launches in `cwd`; the folder the session ran in, or the launch's refusal. */
async function ranIn(cwd: string): Promise<{ ran: string } | { refused: string }> {
  const launched = await runtime.launch(request({ cwd }), now);
  if (launched.outcome !== 'started') return { refused: (launched as { detail: string }).detail };
  await eventually(async () => {
    const o: Observation = await runtime.observe(launched.sessionId, now);
    return o.status === 'running' ? undefined : o;
  });
  return { ran: readFileSync(join(sessionsDir, `${launched.sessionId}.log`), 'utf8').trim() };
}

describe('a cwd is confined where the kernel will walk it', () => {
  test.each(['missing/../outlink', 'missing/../outlink/inside', 'work/missing/../../outlink', 'a/b/../../outlink'])(
    '%s is refused at activation (VALIDATION_FAILED, naming the missing folder) and at launch',
    async (cwd) => {
      expect(activationError(cwd)).toMatchObject({
        code: 'VALIDATION_FAILED',
        details: { field: 'action.cwd', cwd, problems: [expect.stringMatching(/does not exist or is not a folder/)] },
      });
      const launched = await ranIn(cwd);
      expect(launched).toEqual({ refused: expect.stringContaining('cannot be confined to the cwd roots') });
    },
  );

  test('".." after a folder that exists is walked as the kernel walks it, through symlinks', async () => {
    expect(activationError('outlink/inside/..')).toMatchObject({ code: 'VALIDATION_FAILED' });
    expect(activationError('outlink/..')).toMatchObject({ code: 'VALIDATION_FAILED' });
    expect(await ranIn('outlink/..')).toEqual({ refused: expect.stringContaining(`resolves to ${dir},`) });
    // Plain names under a missing folder cannot hide a link: accepted, and launched once they exist.
    expect(activationError('later/./made')).toBeUndefined();
    mkdirSync(join(root, 'later', 'made'), { recursive: true });
    expect(await ranIn('later/./made')).toEqual({ ran: join(root, 'later', 'made') });
    expect(await ranIn('work/../later/made/..')).toEqual({ ran: join(root, 'later') });
  });

  test('a folder swapped for a symlink between activation and launch is refused at launch', async () => {
    mkdirSync(join(root, 'swapped'));
    expect(activationError('swapped')).toBeUndefined();
    rmSync(join(root, 'swapped'), { recursive: true });
    symlinkSync(outside, join(root, 'swapped'));
    expect(await ranIn('swapped')).toEqual({ refused: expect.stringContaining(`resolves to ${outside},`) });
  });

  test('a folder swapped for a symlink after the launch checked it is never entered: the chdir uses what was checked', async () => {
    const roots = new CwdRoots([root]);
    mkdirSync(join(root, 'flip', 'inside'), { recursive: true });
    const location = roots.locate('flip/inside');
    expect(location).toMatchObject({ inside: true, path: join(root, 'flip', 'inside') });
    renameSync(join(root, 'flip'), join(root, 'flip.away'));
    symlinkSync(outside, join(root, 'flip'));
    let used: string | undefined;
    const use = async (cwd: string) => (used = cwd);
    await expect(roots.pinned(location, use)).rejects.toThrow(CwdRefusedError);
    await expect(roots.pinned(location, use)).rejects.toThrow(`now leads to ${join(outside, 'inside')}`);
    expect(used).toBeUndefined();
    rmSync(join(root, 'flip'));
    renameSync(join(root, 'flip.away'), join(root, 'flip'));
    expect(await roots.pinned(location, async (cwd) => realpathSync(cwd))).toBe(join(root, 'flip', 'inside'));
  });
});

// A worker that keeps swapping `root/race` between a real folder (kept 0.4 ms) and a symlink to `outside`
// (kept 0.1 ms; each holds an `inside` folder), missing only between two renames, so launches into
// `race/inside` meet every interleaving of their check and their chdir (before the chdir used the checked
// folder, about 1 launch in 12 ran outside).
const SWAPPER = `
const { renameSync } = require('node:fs');
const { workerData } = require('node:worker_threads');
const { race, away, link, stop } = workerData;
const flag = new Int32Array(stop);
const hold = (ns) => { const from = process.hrtime.bigint(); while (process.hrtime.bigint() - from < ns); };
while (Atomics.load(flag, 0) === 0) {
  try { renameSync(race, away); renameSync(link, race); hold(100000n); renameSync(race, link); renameSync(away, race); hold(400000n); } catch {}
}
`;

const LAUNCHES = process.env.COVEN_STRESS === '1' ? 1000 : 80;

describe('launches racing a folder swapped for a symlink', () => {
  test('no session ever runs outside the roots', async () => {
    const race = join(root, 'race');
    mkdirSync(join(race, 'inside'), { recursive: true });
    symlinkSync(outside, join(root, 'race.link'));
    const stop = new SharedArrayBuffer(4);
    const worker = new Worker(SWAPPER, {
      eval: true,
      workerData: { race, away: join(root, 'race.away'), link: join(root, 'race.link'), stop },
    });
    const tally = { inside: 0, outside: 0, refused: 0 };
    try {
      for (let n = 0; n < LAUNCHES; n++) {
        const outcome = await ranIn('race/inside');
        if ('refused' in outcome) tally.refused += 1;
        else if (outcome.ran.startsWith(`${root}/`)) tally.inside += 1;
        else tally.outside += 1;
      }
    } finally {
      Atomics.store(new Int32Array(stop), 0, 1);
      await worker.terminate();
    }
    console.info(`[cwd race] ${LAUNCHES} launches: ${JSON.stringify(tally)}`);
    expect(tally.outside).toBe(0);
    expect(tally.inside + tally.refused).toBe(LAUNCHES);
  }, 120_000);
});

import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeEach, describe, expect, test } from 'vitest';
import { runCli } from '../support/run-cli.js';
import { eventually } from '../support/eventually.js';

const dir = realpathSync(mkdtempSync(join(tmpdir(), 'coven-cli-runtime-')));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const cli = runCli;

describe('the CLI confines and equips the child-process runtime', () => {
  let store: string;
  let folder: string;
  beforeEach(() => {
    folder = mkdtempSync(join(dir, 'store-'));
    store = join(folder, 'automations.json');
  });
  const definition = (id: string, cwd?: string) => {
    const file = join(dir, `${id}-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(
      file,
      JSON.stringify({
        schemaVersion: 'coven.automations.v1',
        automationId: id,
        display: { name: id },
        trigger: {
          variant: 'schedule',
          version: 1,
          schedule: { rrule: 'FREQ=DAILY;BYHOUR=2', timezone: 'Europe/Berlin' },
        },
        action: { variant: 'familiarInvocation', version: 1, prompt: 'job', ...(cwd === undefined ? {} : { cwd }) },
        binding: {
          familiarBindingPolicy: 'exact',
          familiarId: 'charm',
          authority: { approvalPolicyRef: 'policy://charm' },
        },
        runtimeRequirements: { runtimeId: 'coven-code', capabilities: [] },
        policies: {
          timeout: { perRunMinutes: 10 },
          retry: { maxAttempts: 1, backoffPolicy: 'none' },
          concurrency: { overlap: 'forbid' },
          misfire: { disposition: 'latest' },
          retention: { occurrenceHistory: { classification: 'standard' } },
        },
      }),
    );
    return file;
  };
  const stateOf = async (id: string) =>
    (
      JSON.parse((await cli('--store', store, '--json', 'get', id)).out) as {
        result: { lifecycleState: string; revision: number };
      }
    ).result;

  test('a cwd outside the store folder (/etc, ../../../../, a symlink out) is refused at activation with VALIDATION_FAILED naming the field and the roots', async () => {
    symlinkSync('/etc', join(folder, 'etc-link'));
    for (const [id, cwd] of [
      ['etc', '/etc'],
      ['up', '../../../../'],
      ['link', 'etc-link'],
    ] as const) {
      expect((await cli('--store', store, 'apply', '-f', definition(id, cwd))).code).toBe(0);
      const human = await cli('--store', store, 'activate', id);
      expect(human.code).toBe(1);
      expect(human.err).toMatch(
        new RegExp(
          `^VALIDATION_FAILED \\(400\\): definition ${id}: action\\.cwd .* outside every cwd root \\(${folder}\\)`,
        ),
      );
      const json = JSON.parse((await cli('--store', store, '--json', 'activate', id)).out) as {
        outcome: string;
        error: { code: string; details: Record<string, unknown> };
      };
      expect(json).toMatchObject({
        outcome: 'rejected',
        error: { code: 'VALIDATION_FAILED', details: { field: 'action.cwd', cwd, roots: [folder] } },
      });
      expect(await stateOf(id)).toMatchObject({ lifecycleState: 'paused', revision: 2 });
    }
    // --cwd-root widens the roots (repeatable); the same definition then activates.
    expect((await cli('--store', store, '--cwd-root', folder, '--cwd-root', '/etc', 'activate', 'etc')).out).toBe(
      'etc: active (revision 3)',
    );
  });

  test('revising an active definition onto a cwd outside the roots is refused and commits nothing', async () => {
    mkdirSync(join(folder, 'work'));
    await cli('--store', store, 'apply', '-f', definition('daily', 'work'));
    expect((await cli('--store', store, 'activate', 'daily')).out).toBe('daily: active (revision 3)');
    const revised = await cli('--store', store, 'apply', '-f', definition('daily', '/etc'));
    expect(revised).toMatchObject({
      code: 1,
      err: expect.stringMatching(/^VALIDATION_FAILED \(400\): definition daily: action\.cwd "\/etc"/),
    });
    expect(await stateOf('daily')).toMatchObject({ lifecycleState: 'active', revision: 3 });
  });

  test('a launch that cannot start says why in the human history', async () => {
    await cli('--store', store, 'apply', '-f', definition('gone', 'not-created'));
    await cli('--store', store, 'activate', 'gone');
    expect((await cli('--store', store, 'run-now', 'gone')).code).toBe(0);
    const history = await cli('--store', store, 'history', 'gone');
    expect(history.out).toMatch(/reason/);
    expect(history.out).toContain(
      `attempt 1 failed: launch_refused: working directory ${join(folder, 'not-created')} does not exist`,
    );
  });

  test('--pass-env hands a named engine variable to the child; without it the child does not see it', async () => {
    process.env.CP_CLI_SECRET = 'passed';
    try {
      const command = 'printf "%s" "${CP_CLI_SECRET-unset}" > "$COVEN_AUTOMATION_ID.env"';
      for (const id of ['plain', 'passing']) {
        await cli('--store', store, 'apply', '-f', definition(id));
        await cli('--store', store, 'activate', id);
      }
      expect((await cli('--store', store, '--command', command, 'run-now', 'plain')).code).toBe(0);
      expect(
        (await cli('--store', store, '--command', command, '--pass-env', 'CP_CLI_SECRET', 'run-now', 'passing')).code,
      ).toBe(0);
      // No cwd: sessions run in the first root, the store's folder.
      const read = (id: string) =>
        eventually(async () =>
          existsSync(join(dirname(store), `${id}.env`))
            ? readFileSync(join(dirname(store), `${id}.env`), 'utf8')
            : undefined,
        );
      expect(await read('plain')).toBe('unset');
      expect(await read('passing')).toBe('passed');
    } finally {
      delete process.env.CP_CLI_SECRET;
    }
  });

  test('bad --pass-env and --cwd-root values are usage errors', async () => {
    // On a store that exists: a read against a missing one is refused for that first.
    expect((await cli('--store', store, 'init')).code).toBe(0);
    expect(await cli('--store', store, '--pass-env', 'A=B', 'list')).toMatchObject({
      code: 1,
      err: '--pass-env: "A=B" is not an environment variable name',
    });
    expect(await cli('--store', store, '--cwd-root', join(dir, 'nowhere'), 'list')).toMatchObject({
      code: 1,
      err: expect.stringMatching(/^--cwd-root: cwd root .*nowhere cannot be used/),
    });
  });
});

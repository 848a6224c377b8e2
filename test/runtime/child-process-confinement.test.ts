import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import { defaultRequirements } from '../../src/command-handler/context.js';
import type { AutomationDefinition } from '../../src/domain/definition-body.js';
import { isContractError } from '../../src/contract/errors.js';
import { ChildProcessRuntime } from '../../src/runtime/child-process-runtime.js';
import { CHILD_ENV_ALLOWLIST, LOCALE_VARIABLES, childEnvironment } from '../../src/runtime/child-env.js';
import { CwdRoots } from '../../src/runtime/cwd-roots.js';
import { confineCwd } from '../../src/command-handler/cwd-requirements.js';
import type { LaunchRequest, Observation } from '../../src/runtime/runtime.js';
import { packageRoot } from '../../src/contract/package-root.js';
import { eventually } from '../support/eventually.js';
import { launchRequests } from '../support/launch-request.js';

const dir = realpathSync(mkdtempSync(join(tmpdir(), 'coven-confine-')));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const root = join(dir, 'root');
mkdirSync(join(root, 'work', 'notes'), { recursive: true });
symlinkSync('/etc', join(root, 'etc-link'));
const sessionsDir = join(root, 'sessions');
const now = new Date('2026-03-02T09:00:00.000Z');
const request = launchRequests((n) => `confine-${n}`);
const finished = (runtime: ChildProcessRuntime, id: string) =>
  eventually(async () => {
    const o: Observation = await runtime.observe(id, now);
    return o.status === 'running' ? undefined : o;
  });
/** Runs `command` to its end and answers what it printed. */
async function output(runtime: ChildProcessRuntime, over: Partial<LaunchRequest> = {}): Promise<string> {
  const launched = await runtime.launch(request(over), now);
  if (launched.outcome !== 'started') throw new Error(`not started: ${JSON.stringify(launched)}`);
  expect(await finished(runtime, launched.sessionId)).toMatchObject({ status: 'exited', exitCode: 0 });
  return readFileSync(join(sessionsDir, `${launched.sessionId}.log`), 'utf8');
}

describe('the child environment is explicit', () => {
  const saved = { ...process.env };
  afterEach(() => {
    for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
    Object.assign(process.env, saved);
  });
  const printEnv =
    'printf "%s|%s|%s|%s|%s" "${CP_SECRET-unset}" "${COVEN_ENGINE_SETTING-unset}" "${FIXED-unset}" "${PATH:+path}" "$COVEN_PROMPT"';

  test('a variable set in the engine is absent in the child unless passed; COVEN_* session variables and the allowlist arrive', async () => {
    process.env.CP_SECRET = 'hunter2';
    process.env.COVEN_ENGINE_SETTING = 'engine-only';
    const plain = new ChildProcessRuntime({ runtimeId: 'sh', command: printEnv, sessionsDir, cwdRoots: [root] });
    expect(await output(plain)).toBe('unset|unset|unset|path|say hello');
    const passing = new ChildProcessRuntime({
      runtimeId: 'sh',
      command: printEnv,
      sessionsDir,
      cwdRoots: [root],
      passEnv: ['CP_SECRET', 'NOT_SET_ANYWHERE'],
      env: { FIXED: 'yes' },
    });
    expect(await output(passing)).toBe('hunter2|unset|yes|path|say hello');
  });

  test('locale variables pass by exact name only: LC_LEAKY_TOKEN stays out, in the function and in a real child', async () => {
    expect(CHILD_ENV_ALLOWLIST).toEqual([
      'PATH',
      'HOME',
      'USER',
      'LOGNAME',
      'SHELL',
      'LANG',
      'LANGUAGE',
      'LC_ALL',
      'LC_COLLATE',
      'LC_CTYPE',
      'LC_MESSAGES',
      'LC_MONETARY',
      'LC_NUMERIC',
      'LC_TIME',
      'LC_ADDRESS',
      'LC_IDENTIFICATION',
      'LC_MEASUREMENT',
      'LC_NAME',
      'LC_PAPER',
      'LC_TELEPHONE',
      'TZ',
      'TERM',
      'TMPDIR',
    ]);
    const locale = Object.fromEntries(LOCALE_VARIABLES.map((name) => [name, 'C.UTF-8']));
    const env = childEnvironment(
      { PATH: '/bin', ...locale, LC_LEAKY_TOKEN: 's3cret', LC_: 'x', LCX: 'y', AWS_SECRET_ACCESS_KEY: 'k' },
      { env: { COVEN_PROMPT: 'fixed' } },
      { COVEN_PROMPT: 'session' },
    );
    expect(env).toEqual({ PATH: '/bin', ...locale, COVEN_PROMPT: 'session' });
    process.env.LC_LEAKY_TOKEN = 's3cret';
    process.env.LC_MESSAGES = 'C';
    const command = 'printf "%s|%s" "${LC_LEAKY_TOKEN-unset}" "${LC_MESSAGES-unset}"';
    const runtime = new ChildProcessRuntime({ runtimeId: 'sh', command, sessionsDir, cwdRoots: [root] });
    expect(await output(runtime)).toBe('unset|C');
  });

  test('session variables cannot be overridden, and passEnv names are checked', () => {
    const env = childEnvironment(
      { PATH: '/bin', LC_TIME: 'C', AWS_SECRET_ACCESS_KEY: 'k', SSH_AUTH_SOCK: '/s', COVEN_PROMPT: 'engine' },
      { env: { COVEN_PROMPT: 'fixed' } },
      { COVEN_PROMPT: 'session' },
    );
    expect(env).toEqual({ PATH: '/bin', LC_TIME: 'C', COVEN_PROMPT: 'session' });
    expect(
      () =>
        new ChildProcessRuntime({ runtimeId: 'sh', command: 'true', sessionsDir, cwdRoots: [root], passEnv: ['A=B'] }),
    ).toThrow(/not an environment variable name/);
  });

  test('the CLI guide lists every allowlisted name', () => {
    const readme = readFileSync(join(packageRoot(), 'docs', 'cli.md'), 'utf8');
    const passage = readme.slice(readme.indexOf('*Environment*'), readme.indexOf('*Working directory*'));
    expect(CHILD_ENV_ALLOWLIST.filter((name) => !passage.includes(`\`${name}\``))).toEqual([]);
    expect(passage).not.toContain('`LC_*`');
  });
});

describe('cwd is confined to the roots, by real path', () => {
  const runtime = new ChildProcessRuntime({ runtimeId: 'sh', command: 'pwd', sessionsDir, cwdRoots: [root] });

  test.each(['/etc', '../../../../', 'etc-link', 'work/../../..', '/'])(
    'launch refuses %s deterministically, before spawning anything',
    async (cwd) => {
      const launched = await runtime.launch(request({ cwd }), now);
      expect(launched).toMatchObject({ outcome: 'failed', failureClass: 'launch_refused' });
      expect((launched as { detail: string }).detail).toContain(`outside every cwd root (${root})`);
      expect(runtime.launches).toEqual([]);
    },
  );

  test('a cwd inside a root runs there; relative ones resolve against the first root; no cwd runs in it', async () => {
    expect(await output(runtime, { cwd: 'work/notes' })).toBe(`${join(root, 'work', 'notes')}\n`);
    expect(await output(runtime, { cwd: join(root, 'work') })).toBe(`${join(root, 'work')}\n`);
    expect(await output(runtime, { cwd: 'work/notes/../..' })).toBe(`${root}\n`);
    expect(await output(runtime)).toBe(`${root}\n`);
  });

  test('roots must exist and the default cwd must lie inside them', () => {
    expect(() => new CwdRoots([join(dir, 'nowhere')])).toThrow(/cwd root .* cannot be used/);
    expect(() => new CwdRoots(['relative'])).toThrow(/not an absolute path/);
    expect(() => new CwdRoots([root], '/etc')).toThrow(/outside the cwd roots/);
    expect(new CwdRoots([join(root, 'etc-link')]).roots).toEqual([realpathSync('/etc')]);
  });

  test('the requirements check refuses activation outside the roots with VALIDATION_FAILED naming the field and the roots', () => {
    const check = confineCwd([runtime], defaultRequirements(['sh']));
    const definition = (cwd: string | undefined) =>
      ({
        automationId: 'daily',
        action: { variant: 'familiarInvocation', version: 1, prompt: 'p', ...(cwd === undefined ? {} : { cwd }) },
        binding: {
          familiarBindingPolicy: 'exact',
          familiarId: 'charm',
          authority: { approvalPolicyRef: 'policy://x' },
        },
        runtimeRequirements: { runtimeId: 'sh', capabilities: [] },
      }) as unknown as AutomationDefinition;
    for (const cwd of ['/etc', '../../../../', 'etc-link', 'missing/../../../..']) {
      let thrown: unknown;
      try {
        check(definition(cwd));
      } catch (error) {
        thrown = error;
      }
      expect(isContractError(thrown), cwd).toBe(true);
      expect(thrown).toMatchObject({
        code: 'VALIDATION_FAILED',
        httpStatus: 400,
        details: { field: 'action.cwd', cwd, roots: [root] },
      });
      expect((thrown as Error).message).toContain(root);
    }
    // Inside, or not there yet (the launch checks again once it exists): the rest of the check decides.
    expect(check(definition('work/notes'))).toEqual({
      familiar: true,
      authority: true,
      runtime: true,
      registeredRuntimes: ['sh'],
    });
    expect(check(definition('not-yet/created'))).toEqual({
      familiar: true,
      authority: true,
      runtime: true,
      registeredRuntimes: ['sh'],
    });
    expect(check(definition(undefined))).toEqual({
      familiar: true,
      authority: true,
      runtime: true,
      registeredRuntimes: ['sh'],
    });
  });
});

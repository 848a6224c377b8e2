import { readFileSync } from 'node:fs';
import { afterEach, expect, test } from 'vitest';
import { packageVersion } from '../../src/cli/program.js';
import { killChildren, runCliProcess } from '../daemon/daemon-process.js';

afterEach(killChildren);

test('--version and -V print the version package.json gives, and exit 0', async () => {
  const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
  expect(packageVersion()).toBe(version);
  for (const flag of ['--version', '-V']) {
    const run = await runCliProcess([flag]);
    expect(run, flag).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  }
  // --help lists it among the global options.
  expect((await runCliProcess(['--help'])).stdout).toMatch(/-V, --version\s+print the version/);
}, 60_000);

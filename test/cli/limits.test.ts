import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { runCli } from '../support/run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-cli-limits-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test('limits set -f sets store-wide caps, limits show lists every gate, a stale revision is refused', async () => {
  const store = join(mkdtempSync(join(dir, 'store-')), 'automations.json');
  const cli = (...args: string[]) => runCli('--store', store, ...args);
  expect((await cli('apply', '-f', 'examples/tagged-report.json')).code).toBe(0);
  const none = await cli('limits', 'show');
  expect(none.code, none.err).toBe(0);
  // The automation's own rate limit is a gate before any store-wide limit is set.
  expect(none.out).toBe('limits revision 0\nautomation:tagged-report     rate 0/4 per 60 min, 0 waiting');

  const set = await cli('limits', 'set', '-f', 'examples/limits.json', '--expect-revision', '0');
  expect(set.code, set.err).toBe(0);
  expect(set.out).toMatch(/^limits revision 1 set; in flight now: \{"runtime:coven-code":0,"tag:reports":0\}$/);
  const shown = await cli('limits', 'show');
  expect(shown.out.split('\n').slice(1)).toEqual([
    'automation:tagged-report     rate 0/4 per 60 min, 0 waiting',
    'runtime:coven-code           in flight 0/4, 0 waiting',
    'tag:mail                     rate 0/30 per 60 min, 0 waiting',
    'tag:reports                  in flight 0/2, 0 waiting',
  ]);
  const json = JSON.parse((await cli('limits', 'show', '--json')).out) as { result: { revision: number } };
  expect(json.result.revision).toBe(1);

  const stale = await cli('limits', 'set', '-f', 'examples/limits.json', '--expect-revision', '0');
  expect(stale.code).not.toBe(0);
  expect(stale.err).toMatch(/REVISION_CONFLICT/);
});

test('limits set refuses a malformed or invalid file with the contract code, and changes nothing', async () => {
  const store = join(mkdtempSync(join(dir, 'store-')), 'automations.json');
  const cli = (...args: string[]) => runCli('--store', store, ...args);
  const broken = join(dir, 'broken.json');
  writeFileSync(broken, '{"tags": {');
  const invalid = join(dir, 'invalid.json');
  writeFileSync(invalid, JSON.stringify({ tags: { reports: { inFlight: -1 } } }));
  for (const file of [broken, invalid]) {
    const refused = await cli('limits', 'set', '-f', file);
    expect(refused.code).not.toBe(0);
    expect(refused.err).toMatch(/VALIDATION_FAILED/);
  }
  expect((await cli('limits', 'show')).out).toMatch(/^no limits set/);
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { runCli } from '../support/run-cli.js';
import { activeDefinition } from './cli-fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-cli-authority-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function storeWithNightly() {
  const folder = mkdtempSync(join(dir, 'store-'));
  const store = join(folder, 'automations.json');
  await activeDefinition(store, folder, 'nightly');
  return (...args: string[]) => runCli('--store', store, ...args);
}

describe('the authority registry, approvals, the read ACL and erasure from the CLI', () => {
  test('familiars, capabilities and availability change the registry through their commands', async () => {
    const cli = await storeWithNightly();
    expect(await cli('familiar', 'register', 'charm')).toMatchObject({ code: 0, out: 'familiar charm: revision 1' });
    expect(await cli('familiar', 'revoke', 'charm', '--reason', 'key leaked')).toMatchObject({
      code: 0,
      out: 'familiar charm: revision 1, revoked',
    });
    expect((await cli('familiar', 'revoke', 'ghost')).code).toBe(1);
    expect(await cli('capabilities', 'coven-code', 'fs.read', 'net')).toMatchObject({
      code: 0,
      out: 'coven-code: fs.read, net',
    });
    expect(await cli('authority-availability', 'unavailable')).toMatchObject({ code: 0, out: 'authority unavailable' });
    const typo = await cli('authority-availability', 'maybe');
    expect(typo.code).not.toBe(0);
    expect(typo.err).toContain('available or unavailable');
  });

  test('an approval is granted with its nonce and expiry, and expired on request', async () => {
    const cli = await storeWithNightly();
    const granted = await cli('approval', 'grant', 'nightly', '--nonce', 'nonce-0001', '--ttl-minutes', '5');
    expect(granted.code).toBe(0);
    expect(granted.out).toMatch(/^approval nonce-0001 for nightly, usable once until \d{4}-\d\d-\d\dT/);
    const badTtl = await cli('approval', 'grant', 'nightly', '--ttl-minutes', 'soon');
    expect(badTtl.code).not.toBe(0);
    expect(badTtl.err).toContain('--ttl-minutes');
    expect(await cli('approval', 'expire', '--automation', 'nightly')).toMatchObject({
      code: 0,
      out: 'approvals expired: nonce-0001',
    });
    expect((await cli('approval', 'expire')).out).toBe('approvals expired: none open');
  });

  test('acl grant, revoke and lift; erase tombstones and removes the prompt', async () => {
    const cli = await storeWithNightly();
    expect((await cli('acl', 'grant', 'nightly', 'principal:ana')).out).toBe(
      'nightly: reads restricted to principal:ana',
    );
    expect((await cli('acl', 'revoke', 'nightly', 'principal:ana')).out).toBe(
      'nightly: reads restricted to the operator and its binding',
    );
    expect((await cli('acl', 'lift', 'nightly')).out).toBe('nightly: readable by all');
    expect(await cli('erase', 'nightly', '--reason', 'subject request')).toMatchObject({
      code: 0,
      out: 'nightly: erased',
    });
    const got = await cli('--json', 'get', 'nightly');
    expect(JSON.parse(got.out)).toMatchObject({ result: { lifecycleState: 'tombstoned' } });
    expect(got.out).not.toContain('a job');
  });
});

import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { packageRoot } from '../../src/spec/package-root.js';
import { integrityOf } from '../../src/contract/digest.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-pack-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const root = packageRoot();
const run = (cmd: string, args: string[], cwd: string) => execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });

test('npm pack installs in a clean folder; the examples and the CLI run against the installed package', () => {
  run('npm', ['pack', '--pack-destination', dir, '--silent'], root);
  const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'))!;
  const app = join(dir, 'app');
  cpSync(join(root, 'examples'), app, { recursive: true });
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', join(dir, tarball)], app);
  expect(run('node', ['embed-engine.mjs'], app)).toMatch(/run run-daily-notes-\d+: succeeded; receipt receipt-attempt-run-daily-notes-\d+-1 verifies: true/);
  expect(run('node', ['read-model.mjs'], app)).toMatch(/'daily|twice-daily-\d+': 'succeeded'/);
  expect(run('npx', ['--no-install', 'coven-automata', 'machines'], app)).toContain('coven.automations.v1: 4 lifecycle machines, 10 invariants');
  const receipt = { receiptId: 'receipt-example', outcome: { disposition: 'succeeded' } };
  writeFileSync(join(app, 'receipt.json'), JSON.stringify({ ...receipt, integrity: integrityOf(receipt) }));
  expect(run('npx', ['--no-install', 'coven-automata', 'verify', 'receipt.json'], app)).toMatch(/^valid: [0-9a-f]{64}/);
  writeFileSync(join(app, 'tampered.json'), JSON.stringify({ ...receipt, outcome: { disposition: 'failed' }, integrity: integrityOf(receipt) }));
  const failure = (() => {
    try {
      run('npx', ['--no-install', 'coven-automata', 'verify', 'tampered.json'], app);
      return undefined;
    } catch (error) {
      return error as { status: number; stdout: string };
    }
  })();
  expect(failure?.status).toBe(1);
  expect(failure?.stdout).toMatch(/^INVALID: carried [0-9a-f]{64}, computed [0-9a-f]{64}/);
}, 240_000);

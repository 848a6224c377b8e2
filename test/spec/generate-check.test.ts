import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { packageRoot } from '../../src/contract/package-root.js';

const root = packageRoot();
const tsx = join(root, 'node_modules', '.bin', 'tsx');

/** A throwaway copy of the package, so the real spec is never touched. */
function copyPackage(): string {
  const dir = mkdtempSync(join(tmpdir(), 'coven-generate-'));
  for (const entry of ['package.json', 'spec', 'src', 'tools', 'machines'])
    cpSync(join(root, entry), join(dir, entry), { recursive: true });
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

function generate(dir: string, ...args: string[]) {
  return spawnSync(tsx, ['tools/generate-machines.ts', ...args], { cwd: dir, encoding: 'utf8' });
}

describe('npm run generate -- --check', () => {
  let dir: string;
  beforeAll(() => {
    dir = copyPackage();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('passes on the committed machines', () => {
    const result = generate(dir, '--check');
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  }, 30_000);

  test('fails after a spec edit without regeneration, then passes once regenerated', () => {
    const specFile = join(dir, 'spec/coven-automations/v1/state-machines.json');
    const edited = JSON.parse(readFileSync(specFile, 'utf8'));
    edited.machines[2].transitions[2].guard = { id: 'cancellationRequested', text: 'a cancellation was requested' };
    writeFileSync(specFile, JSON.stringify(edited, null, 2));

    const stale = generate(dir, '--check');
    expect(stale.status).toBe(1);
    expect(stale.stderr).toContain('machines/run.ts');

    execFileSync(tsx, ['tools/generate-machines.ts'], { cwd: dir });
    expect(readFileSync(join(dir, 'machines/run.ts'), 'utf8')).toContain("'cancellationRequested'");
    expect(generate(dir, '--check').status).toBe(0);
  }, 30_000);

  test('--spec FILE --out DIR writes the machines of another spec under DIR, leaving the package alone', () => {
    const out = mkdtempSync(join(tmpdir(), 'coven-generate-out-'));
    try {
      const specFile = join(out, 'edited.json');
      const edited = JSON.parse(readFileSync(join(root, 'spec/coven-automations/v1/state-machines.json'), 'utf8'));
      edited.machines[2].transitions[2].guard = { id: 'cancellationRequested', text: 'a cancellation was requested' };
      writeFileSync(specFile, JSON.stringify(edited, null, 2));
      const before = readFileSync(join(dir, 'machines/run.ts'), 'utf8');
      const result = generate(dir, '--spec', specFile, '--out', out);
      expect(result.stderr).toBe('');
      expect(result.status).toBe(0);
      expect(readFileSync(join(out, 'machines/run.ts'), 'utf8')).toContain("'cancellationRequested'");
      expect(readFileSync(join(dir, 'machines/run.ts'), 'utf8')).toBe(before);
      expect(generate(dir, '--spec', join(out, 'missing.json')).stderr).toContain('missing.json');
      expect(generate(dir, '--out').stderr).toBe('--out needs a path\n');
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 60_000);

  test('covers the typed constants: a hand edit of machines/states.ts or a new state is drift', () => {
    const statesFile = join(dir, 'machines/states.ts');
    writeFileSync(statesFile, readFileSync(statesFile, 'utf8').replace("claimed: 'claimed',", "claimed: 'taken',"));
    const edited = generate(dir, '--check');
    expect(edited.status).toBe(1);
    expect(edited.stderr).toContain('machines/states.ts');
    execFileSync(tsx, ['tools/generate-machines.ts'], { cwd: dir });
    expect(generate(dir, '--check').status).toBe(0);

    const specFile = join(dir, 'spec/coven-automations/v1/state-machines.json');
    const spec = JSON.parse(readFileSync(specFile, 'utf8'));
    spec.machines[2].states.push('archived');
    spec.machines[2].terminal.push('archived');
    spec.machines[2].transitions.push({ from: 'accepted', to: 'archived', on: 'archive', actor: 'command_handler' });
    writeFileSync(specFile, JSON.stringify(spec, null, 2));
    const stale = generate(dir, '--check');
    expect(stale.status).toBe(1);
    expect(stale.stderr).toContain('machines/states.ts');
    execFileSync(tsx, ['tools/generate-machines.ts'], { cwd: dir });
    const states = readFileSync(statesFile, 'utf8');
    expect(states).toContain("archived: 'archived',");
    expect(states).toContain("archive: 'archive',");
    expect(generate(dir, '--check').status).toBe(0);
  }, 30_000);

  test('covers the extension machines: an extension spec edit is drift until regenerated', () => {
    const extensionFile = join(dir, 'spec/coven-automata/v1/extension-machines.json');
    const original = readFileSync(extensionFile, 'utf8');
    const edited = JSON.parse(original);
    edited.machines[1].transitions.push({ from: 'held', to: 'ended', on: 'hold_run_settled', actor: 'dispatcher' });
    writeFileSync(extensionFile, JSON.stringify(edited, null, 2));

    const stale = generate(dir, '--check');
    expect(stale.status).toBe(1);
    expect(stale.stderr).toContain('machines/run-hold.ts');
    expect(stale.stderr).not.toContain('machines/outbox.ts');

    execFileSync(tsx, ['tools/generate-machines.ts'], { cwd: dir });
    expect(generate(dir, '--check').status).toBe(0);
    writeFileSync(extensionFile, original);
    execFileSync(tsx, ['tools/generate-machines.ts'], { cwd: dir });
  }, 30_000);

  test('refuses to generate from an unsound extension spec, naming the state', () => {
    const extensionFile = join(dir, 'spec/coven-automata/v1/extension-machines.json');
    const original = readFileSync(extensionFile, 'utf8');
    const edited = JSON.parse(original);
    edited.machines[2].transitions = edited.machines[2].transitions.filter(
      (t: { from: string }) => t.from !== 'quarantined',
    );
    writeFileSync(extensionFile, JSON.stringify(edited, null, 2));
    const result = generate(dir);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('the extension spec is unsound');
    expect(result.stderr).toContain("state 'quarantined' cannot reach any terminal state");
    writeFileSync(extensionFile, original);
    expect(generate(dir, '--check').status).toBe(0);
  }, 30_000);

  test('refuses to generate from an unsound spec, naming the transition', () => {
    const specFile = join(dir, 'spec/coven-automations/v1/state-machines.json');
    const edited = JSON.parse(readFileSync(specFile, 'utf8'));
    edited.machines[3].transitions.push({ from: 'failed', to: 'adopted', on: 'dispatch', actor: 'dispatcher' });
    writeFileSync(specFile, JSON.stringify(edited, null, 2));
    const result = generate(dir);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(
      "attempt.v1 failed -> adopted on dispatch (dispatcher) leaves terminal state 'failed'",
    );
  }, 30_000);
});

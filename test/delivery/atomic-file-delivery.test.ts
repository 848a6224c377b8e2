import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { sha256Hex } from '../../src/contract/digest.js';
import { checkOutputTarget, CAPABILITY_PROFILE } from '../../src/contract/capabilities.js';
import { ContractError } from '../../src/contract/errors.js';
import { AtomicFileDelivery } from '../../src/runtime/output-delivery.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-atomic-delivery-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
/** A fresh delivery root for each test. */
function root(): string {
  const path = join(dir, `root-${++n}`);
  mkdirSync(path);
  return path;
}

/** Every file under `path`, relative, recursively. */
const filesUnder = (path: string): string[] =>
  readdirSync(path, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(path.length + 1))
    .sort();

describe('AtomicFileDelivery', () => {
  test('writes the content to the target, creating its folder, and leaves no spool behind', async () => {
    const at = root();
    const delivery = new AtomicFileDelivery(at);
    const { digest } = await delivery.commit('reports/daily.md', '# Daily\n');
    expect(readFileSync(join(at, 'reports/daily.md'), 'utf8')).toBe('# Daily\n');
    expect(digest).toBe(sha256Hex('# Daily\n'));
    expect(filesUnder(at)).toEqual(['reports/daily.md']);
  });

  test('replaces an existing target whole', async () => {
    const at = root();
    writeFileSync(join(at, 'out.md'), 'the old report, which is longer than the new one\n');
    await new AtomicFileDelivery(at).commit('out.md', 'new\n');
    expect(readFileSync(join(at, 'out.md'), 'utf8')).toBe('new\n');
    expect(filesUnder(at)).toEqual(['out.md']);
  });

  test('a commit that fails before the rename leaves the old target and removes its spool', async () => {
    const at = root();
    writeFileSync(join(at, 'out.md'), 'old\n');
    let spooled: string | undefined;
    const delivery = new AtomicFileDelivery(at, {
      beforeRename: async (spool) => {
        spooled = readFileSync(spool, 'utf8');
        throw new Error('disk full');
      },
    });
    await expect(delivery.commit('out.md', 'new\n')).rejects.toThrow('disk full');
    expect(spooled).toBe('new\n');
    expect(readFileSync(join(at, 'out.md'), 'utf8')).toBe('old\n');
    expect(filesUnder(at)).toEqual(['out.md']);
  });

  test('refuses targets outside its root before anything is written', async () => {
    const at = root();
    const outside = join(dir, `outside-${n}`);
    mkdirSync(outside);
    symlinkSync(outside, join(at, 'link'));
    const delivery = new AtomicFileDelivery(at);
    for (const target of ['../escape.md', 'a/../../escape.md', '/etc/passwd', '~/notes.md', 'folder/', ''])
      await expect(delivery.commit(target, 'x'), target).rejects.toThrow();
    await expect(delivery.commit('link/escape.md', 'x')).rejects.toThrow(/outside the delivery root/);
    expect(readdirSync(outside)).toEqual([]);
    expect(existsSync(join(dir, 'escape.md'))).toBe(false);
  });
});

describe('the outputTarget capability', () => {
  test('is advertised, with the home-relative variant refused', () => {
    expect(CAPABILITY_PROFILE.supported.deliveryPolicies.map((p) => p.variant)).toEqual(['outputTarget.atomic']);
    expect(CAPABILITY_PROFILE.refused.map((r) => r.variant)).toContain('outputTarget.home-relative');
    expect(CAPABILITY_PROFILE.refused.map((r) => r.variant)).not.toContain('outputTarget.atomic');
  });

  test('a target must be relative to the delivery root and name a file', () => {
    const codeOf = (target: string) => {
      try {
        checkOutputTarget(target);
        return 'accepted';
      } catch (error) {
        return (error as ContractError).code;
      }
    };
    expect(codeOf('out/review.md')).toBe('accepted');
    expect(codeOf('~/projects/notes/today.md')).toBe('CAPABILITY_UNSUPPORTED');
    for (const bad of ['/abs/out.md', 'C:/out.md', '../out.md', 'a/../../b.md', 'out/', ' ', 'a\\..\\b.md'])
      expect(codeOf(bad), bad).toBe('VALIDATION_FAILED');
  });
});

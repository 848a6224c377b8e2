import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { AtomicFileDelivery } from '../../src/runtime/output-delivery.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-review-escape-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// The port promises a target a symbolic link leads outside the root "is refused before anything is written".
// Creating the target's folders first, then checking where they ended up, writes folders outside the root.
test('a target under a symbolic link that leads outside the root creates no folder outside it', async () => {
  const root = join(dir, 'root');
  const outside = join(dir, 'outside');
  mkdirSync(root);
  mkdirSync(outside);
  symlinkSync(outside, join(root, 'link'));
  const delivery = new AtomicFileDelivery(root);
  await expect(delivery.commit('link/made/by/delivery/report.md', 'x')).rejects.toThrow(/outside the delivery root/);
  expect(existsSync(join(outside, 'made'))).toBe(false);
  expect(readdirSync(outside)).toEqual([]);
});

test('a root that does not exist yet is created on the first delivery', async () => {
  const root = join(dir, 'fresh', 'deliveries');
  await new AtomicFileDelivery(root).commit('a/b.md', 'x');
  expect(readdirSync(join(root, 'a'))).toEqual(['b.md']);
});

// A folder whose name merely starts with two dots ("..drafts") is inside the root, not a `..` segment.
test('a target under a folder named "..drafts" is delivered inside the root', async () => {
  const root = join(dir, 'dotted');
  mkdirSync(root);
  await new AtomicFileDelivery(root).commit('..drafts/report.md', 'x');
  expect(readdirSync(join(root, '..drafts'))).toEqual(['report.md']);
});

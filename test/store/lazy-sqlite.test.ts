import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { packagesAmong, watchModules } from '../support/loaded-modules.js';

// better-sqlite3 is an optional peer dependency: a project on the memory or JSON store need not install it,
// so nothing on those paths may load it. Each case runs in a fresh Node process (see watchModules).
const SQLITE = 'better-sqlite3';
const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'lazy-sqlite-'));
  dirs.push(dir);
  return dir;
}

/** Runs the open-stores fixture for `kinds` and returns its report per store and the modules loaded. */
function openStores(kinds: string[], deny: string[] = []) {
  const dir = scratch();
  const watch = watchModules(['test/store/fixtures/open-stores.ts'], {
    deny,
    env: { STORE_FIXTURE_DIR: dir, STORE_FIXTURE_KINDS: kinds.join(',') },
  });
  const reports = watch.stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { dir, urls: watch.urls, reports };
}

test("import 'coven-automata' loads the stores' modules but not better-sqlite3", () => {
  const { urls } = watchModules(['src/index.ts']);
  // The watch saw the whole graph: the SQLite store's own module is there, its driver is not.
  expect(urls.some((url) => url.endsWith('/src/store/sqlite/sqlite-store.ts'))).toBe(true);
  expect(urls.some((url) => url.endsWith('/src/store/json/json-file-store.ts'))).toBe(true);
  expect(packagesAmong(urls, [SQLITE])).toEqual([]);
}, 60_000);

test('the memory and JSON stores open, write and read without loading better-sqlite3', () => {
  const { urls, reports } = openStores(['memory', 'json']);
  expect(reports).toEqual([
    { kind: 'memory', opened: true, version: 1 },
    { kind: 'json', opened: true, version: 1 },
  ]);
  expect(packagesAmong(urls, [SQLITE])).toEqual([]);
}, 60_000);

test('opening an SQLite store loads better-sqlite3 then, and only then', () => {
  const { urls, reports } = openStores(['sqlite']);
  expect(reports).toEqual([{ kind: 'sqlite', opened: true, version: 1 }]);
  expect(packagesAmong(urls, [SQLITE])).toEqual([SQLITE]);
}, 60_000);

test('without better-sqlite3 installed, JSON still works and SQLite is refused, naming what to install', () => {
  const { dir, urls, reports } = openStores(['json', 'sqlite'], [SQLITE]);
  expect(reports[0]).toEqual({ kind: 'json', opened: true, version: 1 });
  expect(reports[1]).toMatchObject({ kind: 'sqlite', opened: false, name: 'StoreDriverMissingError' });
  expect(reports[1]!.code).toBe('CAPABILITY_UNSUPPORTED');
  expect(reports[1]!.message).toContain('npm install better-sqlite3');
  // Refused before anything was made: no database, no owner lock, no sidecar; the JSON store's files are there.
  const files = readdirSync(dir);
  expect(files).toContain('store.json');
  expect(files.filter((name) => name.includes('sqlite'))).toEqual([]);
  expect(packagesAmong(urls, [SQLITE])).toEqual([]);
}, 60_000);

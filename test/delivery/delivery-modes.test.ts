import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, test } from 'vitest';
import { cliDelivery, CliError } from '../../src/cli/context.js';
import { AtomicFileDelivery } from '../../src/runtime/output-delivery.js';
import { runCli } from '../support/run-cli.js';

// Issue 36 §3: deliveries were written 0644 in 0755 folders, republishing a 0600 session's output to every
// local user. They are 0600 in folders 0700 whatever the umask, unless the operator widens them by name.
const dir = mkdtempSync(join(tmpdir(), 'coven-delivery-modes-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const fresh = () => join(dir, `case-${++n}`);
const modeOf = (path: string) => statSync(path).mode & 0o777;

let saved = 0;
beforeEach(() => {
  saved = process.umask(0o022);
});
afterEach(() => {
  process.umask(saved);
});

describe('AtomicFileDelivery modes', () => {
  test.each(['022', '000', '002'])(
    'under umask %s a delivered file is 0600 and every folder it creates 0700',
    async (umask) => {
      process.umask(Number.parseInt(umask, 8));
      const root = join(fresh(), 'made', 'deliveries');
      await new AtomicFileDelivery(root).commit('reports/daily/today.md', '# Today\n');
      expect(modeOf(join(root, 'reports/daily/today.md'))).toBe(0o600);
      for (const folder of ['reports/daily', 'reports', '.', '..'])
        expect([folder, modeOf(join(root, folder))]).toEqual([folder, 0o700]);
    },
  );

  test('a world-readable target is replaced by a 0600 file; folders that exist keep their mode', async () => {
    const root = fresh();
    mkdirSync(join(root, 'shared'), { recursive: true });
    chmodSync(join(root, 'shared'), 0o755);
    writeFileSync(join(root, 'shared', 'out.md'), 'old\n', { mode: 0o644 });
    await new AtomicFileDelivery(root).commit('shared/out.md', 'new\n');
    expect(readFileSync(join(root, 'shared', 'out.md'), 'utf8')).toBe('new\n');
    expect(modeOf(join(root, 'shared', 'out.md'))).toBe(0o600);
    expect(modeOf(join(root, 'shared'))).toBe(0o755);
  });

  test('fileMode and folderMode widen them exactly, even under umask 077', async () => {
    process.umask(0o077);
    const root = join(fresh(), 'out');
    await new AtomicFileDelivery(root, { fileMode: 0o644, folderMode: 0o755 }).commit('a/b.md', 'x');
    expect([modeOf(join(root, 'a/b.md')), modeOf(join(root, 'a')), modeOf(root)]).toEqual([0o644, 0o755, 0o755]);
  });

  test('a mode that locks the owner out, lets every user write, or is no permission mode is refused', () => {
    for (const [options, message] of [
      [{ fileMode: 0o400 }, 'delivery file mode 0400: the owner needs 0600'],
      [{ fileMode: 0o646 }, 'delivery file mode 0646: no delivery is writable by every user'],
      [{ fileMode: 0o4600 }, 'delivery file mode 04600: not a permission mode'],
      [{ folderMode: 0o600 }, 'delivery folder mode 0600: the owner needs 0700'],
      [{ folderMode: 0o1777 }, 'delivery folder mode 01777: not a permission mode'],
    ] as const)
      expect(() => new AtomicFileDelivery(fresh(), options)).toThrow(message);
  });
});

describe('the CLI', () => {
  test('--delivery-file-mode and --delivery-folder-mode reach the delivery; without them it is private', () => {
    expect(cliDelivery({}, dir)).toMatchObject({ fileMode: 0o600, folderMode: 0o700, root: join(dir, 'deliveries') });
    expect(cliDelivery({ deliveryFileMode: '0640', deliveryFolderMode: '750' }, dir)).toMatchObject({
      fileMode: 0o640,
      folderMode: 0o750,
    });
    expect(() => cliDelivery({ deliveryFileMode: 'rw-r--r--' }, dir)).toThrow(
      new CliError('--delivery-file-mode: expected an octal mode such as 0640; got rw-r--r--'),
    );
    expect(() => cliDelivery({ deliveryFolderMode: '0777' }, dir)).toThrow(
      new CliError('--delivery-folder-mode 0777: no delivery is writable by every user'),
    );
  });

  test('creates a store folder 0700 under umask 022, and the parents it makes', async () => {
    const base = fresh();
    const store = join(base, 'new', 'nested', 'automations.json');
    expect((await runCli('--store', store, 'init')).code).toBe(0);
    expect([modeOf(join(base, 'new')), modeOf(join(base, 'new', 'nested'))]).toEqual([0o700, 0o700]);
  });

  test('a bad mode flag is a one-line error naming it', async () => {
    const store = join(fresh(), 'automations.json');
    expect((await runCli('--store', store, 'init')).code).toBe(0);
    const bad = await runCli('--store', store, '--delivery-file-mode', '0666', 'run-now', 'nothing');
    expect(bad.code).toBe(1);
    expect(bad.err).toContain('--delivery-file-mode 0666: no delivery is writable by every user');
  });
});

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');

/** What a fresh Node process loaded while importing the watched modules. */
export interface ModuleWatch {
  /** Every module URL resolved or required, in load order (duplicates removed). */
  urls: string[];
  /** The process's standard output (what the imported modules printed). */
  stdout: string;
}

export interface WatchOptions {
  /** Packages that resolve as if they were not installed (bare specifiers naming them fail). */
  deny?: string[];
  /** Extra environment for the child (e.g. where a fixture may write). */
  env?: Record<string, string>;
  /** Most milliseconds the child may take. */
  timeoutMs?: number;
  /**
   * Where the child runs and the entries are resolved from (default the repository). Entries outside the
   * repository are plain JavaScript (an installed package, say): tsx is then not loaded, since it would
   * itself be among the modules recorded and resolve from the repository, not from there.
   */
  cwd?: string;
}

/**
 * Imports `entries` (paths relative to the repository, TypeScript through tsx) in order in a fresh Node
 * process and returns every module it loaded: a resolve hook records ES module URLs and the CommonJS
 * cache is read at the end, so a package counts as loaded however it was reached. A fresh process, because
 * the test runner's own graph already holds most packages.
 */
export function watchModules(entries: string[], options: WatchOptions = {}): ModuleWatch {
  const dir = mkdtempSync(join(tmpdir(), 'module-watch-'));
  const log = join(dir, 'urls.txt');
  const cwd = options.cwd ?? root;
  try {
    const result = spawnSync(
      process.execPath,
      [
        ...(cwd === root ? ['--import', 'tsx'] : []),
        '--import',
        join(here, 'module-watch/register.mjs'),
        join(here, 'module-watch/child.mjs'),
        ...entries.map((entry) => resolve(cwd, entry)),
      ],
      {
        cwd,
        encoding: 'utf8',
        timeout: options.timeoutMs ?? 60_000,
        env: {
          ...process.env,
          ...options.env,
          MODULE_WATCH_LOG: log,
          MODULE_WATCH_DENY: (options.deny ?? []).join(','),
        },
      },
    );
    if (result.status !== 0)
      throw new Error(`watched import failed (${result.status ?? result.signal}): ${result.stderr}`);
    const urls = [...new Set(readFileSync(log, 'utf8').split('\n').filter(Boolean))];
    return { urls, stdout: result.stdout };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Which of `packages` have a module among `urls` (found by their folder under node_modules). */
export function packagesAmong(urls: readonly string[], packages: readonly string[]): string[] {
  return packages.filter((name) => urls.some((url) => url.includes(`/node_modules/${name}/`)));
}

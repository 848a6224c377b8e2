import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The directory holding this package's package.json, found by walking up from this module, so the
 * same lookup works from `src/` under tsx and from a compiled `dist/` tree.
 */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'spec'))) return dir;
    const parent = dirname(dir);
    if (parent === dir)
      throw new Error('coven-automata: cannot locate the package root (no package.json with spec/ above this module)');
    dir = parent;
  }
}

/** Where the contract's artifacts (the lifecycle spec and the object schemas) live, relative to the package root. */
export const SPEC_DIR = join('spec', 'coven-automations', 'v1');

import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ESLint, type Linter } from 'eslint';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/contract/package-root.js';

const ROOT = packageRoot();
const RULE = '@stylistic/max-len';
const SOURCES = ['src/**/*.ts', 'tools/**/*.ts'];

// The limit lives in the lint config, so `npm run lint` and this test cannot disagree; the test is
// what makes CI hold the line, since CI runs the tests and not the linter.
const config = (await import(pathToFileURL(join(ROOT, 'eslint.config.js')).href)) as {
  MAX_LEN: Linter.RuleEntry;
};

/** Every line over the limit, as `file:line`, that ESLint reports for `patterns` under `overrideConfig`. */
async function longLines(patterns: string[], overrideConfig?: Linter.Config): Promise<string[]> {
  const eslint = new ESLint({ cwd: ROOT, overrideConfig, ruleFilter: ({ ruleId }) => ruleId === RULE });
  const results = await eslint.lintFiles(patterns);
  return results.flatMap((r) =>
    r.messages
      .filter((m) => m.ruleId === RULE || m.fatal === true)
      .map((m) => `${r.filePath.slice(ROOT.length + 1)}:${m.line} ${m.message}`),
  );
}

describe('no source line over 120 characters', () => {
  it('src/ and tools/ hold none', { timeout: 120_000 }, async () => {
    expect(await longLines(SOURCES)).toEqual([]);
  });

  it('the limit is 120 with only URLs exempt', () => {
    expect(config.MAX_LEN).toEqual(['error', { code: 120, tabWidth: 2, ignoreUrls: true }]);
  });
});

import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { packageRoot } from '../../src/contract/package-root.js';

/**
 * Upstream's data artifacts are read in place (never copied into this repository): from
 * COVEN_UPSTREAM_DIR, or ../shared/upstream beside the repository.
 */
export const upstreamDir = resolve(process.env.COVEN_UPSTREAM_DIR ?? join(packageRoot(), '..', 'shared', 'upstream'));

export const upstreamAvailable = existsSync(join(upstreamDir, 'coven-automations-v1', 'test-vectors.json'));

if (!upstreamAvailable) {
  console.warn(
    `upstream artifacts not found at ${upstreamDir}: suites that need them are skipped (set COVEN_UPSTREAM_DIR)`,
  );
}

export function readUpstreamJson<T = unknown>(relativePath: string): T {
  return JSON.parse(readFileSync(join(upstreamDir, relativePath), 'utf8')) as T;
}

export interface VectorCase {
  name: string;
  kind: 'schema' | 'stateMachine' | 'adoption' | 'changefeed';
  expected: string;
  [key: string]: unknown;
}

export interface TestVectors {
  digestRecipe: Record<string, string>;
  fixtures: Record<string, unknown>;
  cases: VectorCase[];
}

export const testVectors = (): TestVectors => readUpstreamJson<TestVectors>('coven-automations-v1/test-vectors.json');

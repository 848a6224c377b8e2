import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { packageRoot } from '../../contract/package-root.js';
import { runSuite } from './suite-runner.js';
import type { VectorReport } from './vector-format.js';
import { runVector } from './vector-runner.js';

export type FileStatus = 'pass' | 'differs' | 'unsupported' | 'fail' | 'crash';

/** One corpus file: its vectors (a vector file has one, a runner suite one per case), or the crash. */
export interface FileReport {
  file: string;
  status: FileStatus;
  vectors: VectorReport[];
  crash?: string;
}

/** Upstream's data, read in place: COVEN_UPSTREAM_DIR, or ../shared/upstream beside the package. */
export function upstreamDirectory(): string {
  return resolve(process.env.COVEN_UPSTREAM_DIR ?? join(packageRoot(), '..', 'shared', 'upstream'));
}

function jsonFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? jsonFiles(path) : name.endsWith('.json') ? [path] : [];
    });
}

/** Every conformance file under `<upstream>/conformance`: vectors, scenarios and the runner's suites. */
export function findCorpus(upstream = upstreamDirectory()): string[] {
  const root = join(upstream, 'conformance');
  return [
    ...jsonFiles(join(root, 'vectors')),
    ...jsonFiles(join(root, 'scenarios')),
    ...jsonFiles(join(root, 'runner')).filter((f) => f.endsWith('.vectors.json')),
  ];
}

const isSuite = (file: string) => {
  const doc = JSON.parse(readFileSync(file, 'utf8')) as { cases?: unknown; input?: unknown };
  return Array.isArray(doc.cases) && doc.input === undefined;
};

/** The worst status of a file's vectors wins: fail > unsupported > differs > pass. */
function fileStatus(vectors: VectorReport[]): FileStatus {
  for (const s of ['fail', 'unsupported', 'differs'] as const) if (vectors.some((v) => v.status === s)) return s;
  return 'pass';
}

/** Runs one corpus file; anything it throws is reported as a crash of that file, never of the run. */
export async function runFile(file: string): Promise<FileReport> {
  try {
    const vectors = isSuite(file) ? await runSuite(file) : [await runVector(file)];
    return { file, status: fileStatus(vectors), vectors };
  } catch (error) {
    return { file, status: 'crash', vectors: [], crash: error instanceof Error ? error.message : String(error) };
  }
}

/** "N files: P pass, D differ, U unsupported, F fail, C crash". */
export function summaryLine(reports: FileReport[]): string {
  const n = (s: FileStatus) => reports.filter((r) => r.status === s).length;
  return (
    `${reports.length} files: ${n('pass')} pass, ${n('differs')} differ, ${n('unsupported')} unsupported, ` +
    `${n('fail')} fail, ${n('crash')} crash`
  );
}

/** Every `differs` expectation of the reports, with the contract rule that decides it. */
export function differences(reports: FileReport[]) {
  return reports.flatMap((f) =>
    f.vectors.flatMap((v) =>
      v.expectations
        .filter((e) => e.status === 'differs')
        .map((e) => ({ vectorId: v.vectorId, expectation: e.expectation, rule: e.rule ?? '' })),
    ),
  );
}

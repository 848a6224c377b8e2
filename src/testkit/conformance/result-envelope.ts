import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { jcsSha256, sha256Hex } from '../../contract/digest.js';
import {
  auditResultEnvelope,
  evidenceDigest,
  testkitSourcesDigest,
  worstStatus,
  type ProfileResult,
  type ResultStatus,
} from '../result-statement.js';
import type { FileReport } from './corpus.js';
import { suiteIdOf } from './suite-runner.js';

interface InventorySuite {
  profile: string;
  suiteId: string;
  vectorFile: string;
}

/** The profiles of conformance-result.v1 a corpus can report on (`full` is a union, not a profile of its own). */
export const RESULT_PROFILES = [
  'structural',
  'scheduler_reliability',
  'runtime_authority',
  'continuity',
  'privacy',
  'interoperability',
] as const;

/** conformance.vector.v1 names profiles with hyphens, the result envelope with underscores. */
const resultProfile = (vectorProfile: string) => vectorProfile.replaceAll('-', '_');

function readInventory(upstreamDir: string): InventorySuite[] {
  const file = join(upstreamDir, 'conformance', 'runner', 'inventory.json');
  if (!existsSync(file)) return [];
  return (JSON.parse(readFileSync(file, 'utf8')) as { suites: InventorySuite[] }).suites;
}

/**
 * A file's standing as a suite: contract-conformant when every expectation passed or differs by a contract rule,
 * failed on any fail or crash, incomplete while anything was unsupported.
 */
function suiteStatus(report: FileReport): ResultStatus {
  if (report.status === 'fail' || report.status === 'crash') return 'failed';
  return report.status === 'unsupported' ? 'incomplete' : 'passed';
}

/** The suite a corpus file stands for, and the profile it belongs to. */
function suiteOf(report: FileReport, inventory: InventorySuite[]): { suiteId: string; profile: string } {
  const listed = inventory.find((s) => s.vectorFile === basename(report.file));
  if (listed !== undefined) return { suiteId: listed.suiteId, profile: resultProfile(listed.profile) };
  const doc = JSON.parse(readFileSync(report.file, 'utf8')) as {
    vectorId?: string;
    profile?: string;
    schemaVersion?: string;
  };
  const suiteId = doc.vectorId ?? suiteIdOf(String(doc.schemaVersion)) ?? basename(report.file, '.json');
  // An audit suite the inventory does not list names no profile; the suites of command shapes are structural.
  return { suiteId, profile: resultProfile(doc.profile ?? 'structural') };
}

function profileResults(reports: FileReport[], inventory: InventorySuite[]): ProfileResult[] {
  const byProfile = new Map<string, ProfileResult['suiteResults']>(RESULT_PROFILES.map((p) => [p, []]));
  for (const report of reports) {
    const { suiteId, profile } = suiteOf(report, inventory);
    const status = suiteStatus(report);
    const evidence = { vectors: report.vectors, crash: report.crash ?? null };
    const suites = byProfile.get(profile);
    if (suites === undefined) throw new Error(`${report.file}: profile ${profile} is not a conformance-result profile`);
    suites.push({ suiteId, status, ...(status === 'passed' ? { evidenceDigest: evidenceDigest(evidence) } : {}) });
  }
  // An inventory suite the corpus does not hold was not run: the profile cannot be complete without it.
  const ran = new Set(reports.map((r) => basename(r.file)));
  for (const suite of inventory)
    if (!ran.has(suite.vectorFile))
      byProfile.get(resultProfile(suite.profile))?.push({ suiteId: suite.suiteId, status: 'incomplete' });
  return [...byProfile.entries()]
    .filter(([, suites]) => suites.length > 0)
    .map(([profile, suites]) => ({
      profile,
      status: worstStatus(suites.map((s) => s.status)),
      requiredSuites: suites.map((s) => s.suiteId),
      suiteResults: suites,
    }));
}

/**
 * The corpus run as an audit-only `coven.automations.conformance-result.v1` envelope: one profile result for every
 * profile the corpus or the audit runner's inventory names, one suite result per corpus file (a vector or scenario
 * by its vectorId, an audit-runner suite by its inventory id), and the inventory's suites that are not in the corpus
 * as incomplete. The runner is identified by its sources' digest and the corpus by its files' digest.
 *
 * @example
 * const reports = await Promise.all(findCorpus().map(runFile));
 * writeFileSync('result.json', JSON.stringify(corpusConformanceResult(reports, upstreamDirectory(), new Date())));
 */
export function corpusConformanceResult(
  reports: FileReport[],
  upstreamDir: string,
  observedAt: Date,
): Record<string, unknown> {
  const inventory = readInventory(upstreamDir);
  const corpusDigest = jcsSha256(
    reports.map((r) => ({ file: basename(r.file), sha256: sha256Hex(readFileSync(r.file, 'utf8')) })),
  );
  return auditResultEnvelope(
    `coven-automata-conformance-${corpusDigest.slice(0, 16)}`,
    {
      name: 'coven-automata-conformance',
      artifactSha256: testkitSourcesDigest('conformance'),
      vectorSetSha256: corpusDigest,
    },
    profileResults(reports, inventory),
    observedAt,
  );
}

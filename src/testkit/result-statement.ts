import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { arch, platform } from 'node:os';
import { join } from 'node:path';
import { integrityOf, jcsSha256, sha256Hex } from '../contract/digest.js';
import { packageRoot } from '../contract/package-root.js';
import { SPEC_DIR } from '../spec/lifecycle-spec.js';

/** A `coven.automations.conformance-result.v1` status. */
export type ResultStatus = 'passed' | 'failed' | 'incomplete' | 'not_applicable';

/** One profile's entry in a result statement. */
export interface ProfileResult {
  profile: string;
  status: ResultStatus;
  requiredSuites: string[];
  suiteResults: Array<{ suiteId: string; status: ResultStatus; evidenceDigest?: ReturnType<typeof evidenceDigest> }>;
}

/** The commit the package was checked out at, or forty zeros outside a git checkout. */
function gitCommit(root: string): string {
  try {
    const commit = execFileSync('git', ['rev-parse', 'HEAD'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    return /^[0-9a-f]{40}$/.test(commit) ? commit : '0'.repeat(40);
  } catch {
    return '0'.repeat(40);
  }
}

/** SHA-256 over each file's name and content digest, in the order given. */
export function digestOfFiles(dir: string, files: string[]): string {
  return sha256Hex(files.map((f) => `${f}\u0000${sha256Hex(readFileSync(join(dir, f), 'utf8'))}`).join('\n'));
}

/** The sources of one testkit folder, identified by their digests (a runner's `artifactSha256`). */
export function testkitSourcesDigest(folder: string): string {
  const dir = join(packageRoot(), 'src', 'testkit', folder);
  return digestOfFiles(dir, readdirSync(dir).sort());
}

/** The spec bundle a run checked, identified by the digests of its files. */
function protocolArtifact(root: string, commit: string): Record<string, unknown> {
  const specFiles = readdirSync(join(root, SPEC_DIR))
    .filter((f) => f.endsWith('.json'))
    .sort();
  return {
    bundleSchemaVersion: 'coven-automata.spec.v1',
    sourceCommit: commit,
    bundleSha256: digestOfFiles(join(root, SPEC_DIR), specFiles),
    contractContentSha256: sha256Hex(readFileSync(join(root, SPEC_DIR, 'state-machines.json'), 'utf8')),
    fileCount: specFiles.length,
  };
}

/** This package's version, for a runner's `version`. */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}

/** A suite's `evidenceDigest`: JCS SHA-256 over what the suite observed. */
export function evidenceDigest(evidence: unknown) {
  return { algorithm: 'sha256' as const, canonicalization: 'jcs-rfc8785' as const, value: jcsSha256(evidence) };
}

/** The worst of several statuses: failed, then incomplete, then passed; none at all is not applicable. */
export function worstStatus(statuses: ResultStatus[]): ResultStatus {
  if (statuses.length === 0) return 'not_applicable';
  for (const s of ['failed', 'incomplete'] as const) if (statuses.includes(s)) return s;
  return statuses.every((s) => s === 'not_applicable') ? 'not_applicable' : 'passed';
}

/**
 * An audit-only, unsigned `coven.automations.conformance-result.v1` envelope over the given profile results: the
 * source commit, the spec bundle, the environment, and a JCS SHA-256 digest of the statement.
 */
export function auditResultEnvelope(
  resultId: string,
  runner: { name: string; artifactSha256: string; vectorSetSha256: string },
  profileResults: ProfileResult[],
  observedAt: Date,
): Record<string, unknown> {
  const root = packageRoot();
  const commit = gitCommit(root);
  const statement = {
    contractProfile: 'coven.automations.v1',
    resultId,
    decisionScope: { kind: 'audit_only' },
    source: { repository: 'https://coven-automata.invalid/coven-automata', commit },
    protocolArtifact: protocolArtifact(root, commit),
    runner: {
      name: runner.name,
      version: packageVersion(),
      artifactSha256: runner.artifactSha256,
      vectorSetSha256: runner.vectorSetSha256,
    },
    environment: { os: platform(), arch: arch(), runtime: `node-${process.versions.node}` },
    observedAt: observedAt.toISOString(),
    profileResults,
    overallStatus: worstStatus(profileResults.map((p) => p.status)),
  };
  const { value } = integrityOf(statement as Record<string, unknown>);
  return {
    schemaVersion: 'coven.automations.conformance-result.v1',
    statement,
    statementDigest: { algorithm: 'sha256', canonicalization: 'jcs-rfc8785', value },
  };
}

import { jcsSha256 } from '../contract/digest.js';
import type { ExtensionSpec } from './extension-spec.js';
import type { LifecycleSpec } from './lifecycle-spec.js';

/** Which specs a set of generated machines was generated from: the JCS SHA-256 of each parsed spec document. */
export interface GeneratedFrom {
  contractSpecSha256: string;
  extensionSpecSha256: string;
}

/**
 * The digests the generator writes into machines/index.ts (`GENERATED_FROM`) and the invariant suite compares
 * with the specs on disk, so a suite never proves machines generated from another spec. Canonical JSON: the
 * digest follows what a spec says, not how its file is formatted.
 */
export function generatedFromOf(spec: LifecycleSpec, extension: ExtensionSpec): GeneratedFrom {
  return { contractSpecSha256: jcsSha256(spec), extensionSpecSha256: jcsSha256(extension) };
}

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { packageRoot } from '../../contract/package-root.js';
import { SPEC_DIR } from '../../spec/lifecycle-spec.js';

const UPSTREAM_BASE = 'https://opencoven.ai/spec/coven-automations/v1/';

/**
 * Validates a conformance result against upstream's conformance-result.schema.json, read in place from
 * the upstream folder (never copied). Upstream's common.schema.json is not published; this package's own
 * common definitions stand in for it under upstream's base URL.
 * Returns undefined when the upstream schema is not available.
 */
export function validateConformanceResult(result: unknown, upstreamDir: string): string[] | undefined {
  const schemaFile = join(upstreamDir, 'coven-automations-v1', 'conformance-result.schema.json');
  if (!existsSync(schemaFile)) return undefined;
  const common = JSON.parse(readFileSync(join(packageRoot(), SPEC_DIR, 'common.schema.json'), 'utf8')) as Record<
    string,
    unknown
  >;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addSchema({ ...common, $id: `${UPSTREAM_BASE}common.schema.json` });
  const validate = ajv.compile(JSON.parse(readFileSync(schemaFile, 'utf8')) as object);
  return validate(result)
    ? []
    : (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'}: ${e.message ?? e.keyword}`);
}

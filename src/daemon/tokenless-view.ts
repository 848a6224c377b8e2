import { redactPublished } from '../contract/redaction.js';

/** What stands in for a withheld value, saying why it is missing and how to see it. */
export const WITHHELD = {
  output: '[redacted:output]',
  definition: "definition body withheld: read it over the daemon's socket, with its token, or start --public-reads",
} as const;

/**
 * Keys whose string values are what a session printed or threw: a failed attempt's output tail and error message,
 * and the output `logs` reads. A `detail` is the engine's or runtime's own diagnostic (already
 * published-safe, and sealed into receipts the dashboard verifies), so it is left as it is.
 */
const OUTPUT_KEY = /^(output|outputs|stdout|stderr|transcript|outputTail|errorMessage)$/i;

/** What of a definition a tokenless caller sees: which automation and revision it is, and its state and name. */
function definitionSummary(body: Record<string, unknown>): Record<string, unknown> {
  const display = body.display as { name?: unknown } | undefined;
  const summary: Record<string, unknown> = {};
  for (const key of ['schemaVersion', 'automationId', 'revision', 'integrity', 'lifecycleState'])
    if (body[key] !== undefined) summary[key] = body[key];
  if (typeof display?.name === 'string') summary.display = { name: display.name };
  summary.withheld = WITHHELD.definition;
  return summary;
}

function withhold(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withhold);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([key, inner]) => {
      if (key === 'definition' && inner !== null && typeof inner === 'object' && !Array.isArray(inner))
        return [key, definitionSummary(inner as Record<string, unknown>)];
      if (OUTPUT_KEY.test(key) && typeof inner === 'string') return [key, WITHHELD.output];
      return [key, withhold(inner)];
    }),
  );
}

/**
 * A read answer as loopback TCP without the token receives it (unless the operator started the daemon with
 * `--public-reads`): no definition body (a summary of which automation, revision and state instead), no session
 * output, and the published-view redaction over the rest (prompts, absolute paths, credentials). Any local
 * user reaches that port, and so may any web page through a name rebound to 127.0.0.1.
 *
 * @example
 * ```ts
 * tokenlessView({ result: { definition: { automationId: 'a', revision: 2, action: { prompt: 'p' } } } });
 * // { result: { definition: { automationId: 'a', revision: 2, withheld: 'definition body withheld: ...' } } }
 * ```
 */
export function tokenlessView<T>(value: T): T {
  return redactPublished(withhold(value)) as T;
}

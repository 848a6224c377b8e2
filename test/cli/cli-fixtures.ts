import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { withLocalEngine } from '../../src/cli/context.js';
import { eventually } from '../support/eventually.js';
import { runCli } from '../support/run-cli.js';

/** A rich definition file for the CLI tests: daily at `hour` UTC, running in `cwd`. */
export function definitionFile(dir: string, automationId: string, hour = 2, cwd = dir): string {
  const file = join(dir, `${automationId}.json`);
  writeFileSync(
    file,
    JSON.stringify({
      schemaVersion: 'coven.automations.v1',
      automationId,
      display: { name: `Job ${automationId}` },
      trigger: { variant: 'schedule', version: 1, schedule: { rrule: `FREQ=DAILY;BYHOUR=${hour}`, timezone: 'utc' } },
      action: { variant: 'familiarInvocation', version: 1, prompt: 'a job', cwd },
      binding: { familiarBindingPolicy: 'exact', familiarId: 'charm', authority: { approvalPolicyRef: 'policy://c' } },
      runtimeRequirements: { runtimeId: 'coven-code', capabilities: [] },
      policies: {
        timeout: { perRunMinutes: 10 },
        retry: { maxAttempts: 1, backoffPolicy: 'none' },
        concurrency: { overlap: 'forbid' },
        misfire: { disposition: 'latest' },
        retention: { occurrenceHistory: { classification: 'standard' } },
      },
    }),
  );
  return file;
}

/** Applies and activates a definition through the CLI; throws when either step fails. */
export async function activeDefinition(store: string, dir: string, automationId: string): Promise<void> {
  for (const args of [
    ['apply', '-f', definitionFile(dir, automationId)],
    ['activate', automationId],
  ]) {
    const run = await runCli('--store', store, ...args);
    if (run.code !== 0) throw new Error(`${args.join(' ')}: ${run.err}`);
  }
}

/** The id of the one occurrence a view shows for an automation. */
export async function onlyOccurrence(store: string, view: string, automationId: string): Promise<string> {
  const run = await runCli('--store', store, '--json', 'occurrences', '--view', view, '--automation', automationId);
  const listed = JSON.parse(run.out) as { result: { occurrences: Array<{ occurrenceId: string }> } };
  if (listed.result.occurrences.length !== 1) throw new Error(`expected one ${view} occurrence: ${run.out}`);
  return listed.result.occurrences[0]!.occurrenceId;
}

/**
 * Runs engine passes on the store (the CLI's own runtime, so the sessions the CLI launched are observed)
 * until the occurrence settles; returns its state.
 */
export async function settle(
  store: string,
  occurrenceId: string,
  settled: (state: string) => boolean,
): Promise<string> {
  return eventually(async () => {
    await withLocalEngine({ store, command: 'true' }, (engine) => engine.tick());
    const run = await runCli('--store', store, '--json', 'occurrence', occurrenceId);
    const state = (JSON.parse(run.out) as { result: { occurrence: { state: string } } }).result.occurrence.state;
    return settled(state) ? state : undefined;
  }, 20_000);
}

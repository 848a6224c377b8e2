// What every bench cell builds on: a definition body and a command sender that fails loudly.
import { integrityOf } from '../src/contract/digest.js';
import type { CommandResponse } from '../src/command-handler/envelope.js';
import type { Engine } from '../src/engine/engine.js';
import type { LaunchRequest, LaunchResult, Observation, Runtime, SessionExit } from '../src/runtime/runtime.js';

/** A valid definition, due at every instant `rrule` names (UTC), with one attempt and no overlap. */
export function definition(
  automationId: string,
  revision: number,
  lifecycleState: 'draft' | 'paused',
  rrule: string,
): Record<string, unknown> {
  const body: Record<string, unknown> = {
    schemaVersion: 'coven.automations.v1',
    automationId,
    revision,
    lifecycleState,
    display: { name: automationId },
    trigger: { variant: 'schedule', version: 1, schedule: { rrule, timezone: 'utc' } },
    conditions: [],
    action: { variant: 'familiarInvocation', version: 1, prompt: `bench ${automationId}` },
    binding: {
      familiarBindingPolicy: 'exact',
      familiarId: 'charm',
      authority: { approvalPolicyRef: 'policy://bench' },
    },
    runtimeRequirements: { runtimeId: 'coven-code', capabilities: ['sessions.launch'] },
    policies: {
      timeout: { perRunMinutes: 30 },
      retry: { maxAttempts: 1, backoffPolicy: 'none' },
      concurrency: { overlap: 'forbid' },
      misfire: { disposition: 'latest' },
      retention: { occurrenceHistory: { classification: 'standard' } },
    },
    provenance: { createdBy: { principalId: 'principal:bench' } },
  };
  return { ...body, integrity: integrityOf(body) };
}

let keys = 0;

/** Sends one command with a fresh adoption key; answers the response (rejections included). */
export function send(
  engine: Engine,
  name: string,
  payload: Record<string, unknown>,
  expectedRevision?: number,
): Promise<CommandResponse> {
  return engine.commands.handle({
    schemaVersion: 'coven.automations.v1',
    command: name,
    adoptionKey: `bench-key-${String(++keys).padStart(8, '0')}`,
    ...(expectedRevision === undefined ? {} : { expectedRevision }),
    origin: { principal: { principalId: 'principal:bench' }, channel: 'cli' },
    intent: { statement: 'bench' },
    payload,
  });
}

/** Sends one command and throws on a rejection: set-up steps must not fail quietly. */
export async function command(
  engine: Engine,
  name: string,
  payload: Record<string, unknown>,
  expectedRevision?: number,
): Promise<void> {
  const response = await send(engine, name, payload, expectedRevision);
  if (response.outcome === 'rejected') throw new Error(`${name}: ${response.error!.code} ${response.error!.message}`);
}

/** Runs `work` over `items` with at most `inFlight` at once, in order of start; answers results in item order. */
export async function pooled<T, R>(items: T[], inFlight: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < items.length; i = next++) results[i] = await work(items[i]!);
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, items.length) }, lane));
  return results;
}

/** A runtime's session-exit cues: `onSessionExit` for the engine (undefined when made without cues), `cue` to send. */
export class ExitCueSource {
  readonly onSessionExit: Runtime['onSessionExit'];
  private readonly listeners = new Set<(exit: SessionExit) => void>();

  constructor(enabled: boolean) {
    this.onSessionExit = enabled
      ? (listener) => {
          this.listeners.add(listener);
          return () => this.listeners.delete(listener);
        }
      : undefined;
  }

  cue(exit: SessionExit): void {
    for (const listener of this.listeners) listener(exit);
  }
}

/** Sessions that have exited by the time their launch answers, with or without telling the engine so. */
export class ExitingRuntime implements Runtime {
  readonly runtimeId = 'coven-code';
  readonly sideEffectClass = 'local_write' as const;
  readonly sideEffectBoundProven = true;
  readonly onSessionExit: Runtime['onSessionExit'];
  private readonly cues: ExitCueSource;

  constructor(
    push = true,
    private readonly launched: (occurrenceId: string) => void = () => {},
  ) {
    this.cues = new ExitCueSource(push);
    this.onSessionExit = this.cues.onSessionExit;
  }

  async launch(request: LaunchRequest): Promise<LaunchResult> {
    this.launched(request.occurrenceId);
    const sessionId = `s-${request.attemptId}`;
    this.cues.cue({ sessionId, attemptId: request.attemptId });
    return { outcome: 'started', sessionId, cursors: {} };
  }

  async observe(): Promise<Observation> {
    return { status: 'exited', outcome: 'succeeded', exitCode: 0, cancelled: false };
  }

  async cancel(): Promise<void> {}
}

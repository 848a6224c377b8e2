import type { EngineServices } from '../domain/services.js';
import { cancelAttempt, cancelOccurrence, cancelRun } from './cancel-occurrence-work.js';
import type { ImmediateLaunches, OperatorCommands } from './context.js';
import { definitionHealth, runHistory } from './execution-reads.js';
import { runOutput } from './output-reads.js';
import { recover } from './recover.js';
import { retryAttempt } from './retry-attempt.js';
import { runNow, runNowReads } from './run-now.js';
import { unquarantine } from './unquarantine.js';
import { backfill } from './backfill.js';

/** The occurrence/run/attempt commands, bound to an engine's services and its immediate launches. */
export function operatorCommands(svc: EngineServices, launches: ImmediateLaunches): OperatorCommands {
  const dispatch = (occurrenceId: string) => launches.dispatch(occurrenceId);
  return {
    mutations: {
      'occurrence.runNow.v1': (ctx) => runNow(svc, launches, ctx),
      'occurrence.cancel.v1': (ctx) => cancelOccurrence(svc, ctx),
      'run.cancel.v1': (ctx) => cancelRun(svc, ctx),
      'attempt.cancel.v1': (ctx) => cancelAttempt(svc, ctx),
      'attempt.retry.v1': (ctx) => retryAttempt(svc, ctx),
      'occurrence.recover.v1': (ctx) => recover(svc, dispatch, ctx),
      'x-coven-automata.definition.unquarantine.v1': unquarantine,
      'x-coven-automata.definition.backfill.v1': (ctx) => backfill(svc, ctx),
    },
    queries: {
      'run.history.v1': (payload) => svc.store.read((r) => runHistory(r, payload as never)),
      'definition.health.v1': (payload) => svc.store.read((r) => definitionHealth(svc, r, payload as never)),
      'x-coven-automata.run.output.v1': (payload) => runOutput(svc, payload),
    },
    reads: {
      'occurrence.runNow.v1': (payload) => runNowReads(svc, payload),
    },
  };
}

import { Engine } from '../../src/engine/engine.js';
import { ENGINE_PARTS } from '../../src/engine/parts.js';
import { CrashSwitch } from '../../src/testkit/crash-switch.js';
import type { Store, StoreReader, StoreTransaction } from '../../src/store/store.js';
import { PassFacts } from '../../src/observability/pass-facts.js';
import { runDoctor, type DoctorOptions } from '../../src/observability/run-doctor.js';
import { harness, type HarnessOptions } from '../support/engine-harness.js';

/**
 * A store seen through faults, as the testkit injects them: by wrapping the port. `tx` rewrites what a transaction
 * may do, `reader` what a read returns.
 */
export function faultyStore(
  inner: Store,
  faults: { tx?: (tx: StoreTransaction) => StoreTransaction; reader?: (reader: StoreReader) => StoreReader },
): Store {
  return {
    transact: (body) => inner.transact((tx) => body(faults.tx?.(tx) ?? tx)),
    read: (body) => inner.read((reader) => body(faults.reader?.(reader) ?? reader)),
    onCommit: (listener) => inner.onCommit(listener),
    close: () => inner.close(),
  };
}

/** A harness whose engine can crash at a pass phase and whose passes are tracked as a daemon tracks them. */
export async function doctorWorld(options: HarnessOptions = {}) {
  const h = await harness(options);
  const crashes = new CrashSwitch();
  let ids = 1000;
  const engine = new Engine(
    {
      store: h.store,
      clock: h.clock,
      runtimes: [h.runtime],
      instanceId: options.instanceId ?? 'engine-a',
      newId: () => `store-${++ids}`,
      ...(options.retention === undefined ? {} : { retention: options.retention }),
      ...(options.delivery === undefined ? {} : { delivery: options.delivery }),
    },
    crashes.wrap(ENGINE_PARTS),
  );
  const passes = new PassFacts();
  const tick = async (at?: string) => {
    if (at !== undefined) h.clock.set(at);
    passes.observe(await engine.tick());
  };
  const crashAt = async (at: string, point: 'plan' | 'claim' | 'dispatch' | 'observe') => {
    h.clock.set(at);
    passes.observe(await crashes.tickCrashing(engine, point));
  };
  /** The daemon's view: this engine leads, with the passes it ran. */
  const daemonFacts = (): DoctorOptions => ({ leader: { isLeader: true, leaderId: 'engine-a' }, ...passes.snapshot() });
  /** A scheduler that passed cleanly just now (for findings that are about the store, not the scheduler). */
  const freshFacts = (): DoctorOptions => {
    const now = h.clock.now().toISOString();
    return { leader: { isLeader: true, leaderId: 'engine-a' }, lastPassAt: now, lastSuccessfulPassAt: now };
  };
  const doctor = (options: DoctorOptions = {}) => runDoctor(engine, options);
  const codes = async (options: DoctorOptions = {}) => (await doctor(options)).findings.map((f) => f.code).sort();
  return { ...h, engine, passes, tick, crashAt, daemonFacts, freshFacts, doctor, codes };
}

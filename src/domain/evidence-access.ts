import { evidenceReadable } from '../runtime/evidence-location.js';
import type { EvidenceLocation, Runtime } from '../runtime/runtime.js';
import type { EngineServices } from './services.js';

/**
 * Whether `runtime`, in this engine, may decide a launch (or observe a session) whose evidence was recorded at
 * `recorded` by the engine instance `launcherId`: see {@link evidenceReadable}. Anything else is undecided here.
 */
export function canReadEvidence(
  svc: Pick<EngineServices, 'store' | 'instanceId'>,
  runtime: Runtime,
  recorded: EvidenceLocation | undefined,
  launcherId: string | undefined,
): boolean {
  return evidenceReadable(
    {
      here: runtime.evidenceLocation,
      sharedStore: svc.store.sharedByEngines === true,
      ownLaunch: launcherId === svc.instanceId,
    },
    recorded,
  );
}

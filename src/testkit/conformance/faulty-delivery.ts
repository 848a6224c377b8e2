import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AtomicFileDelivery, type DeliveryCommit, type OutputDelivery } from '../../runtime/output-delivery.js';

/** The delivery behaviours of conformance.vector.v1's `deliveryBehavior` op. */
export type DeliveryBehavior = 'commit' | 'commit-failure';

/**
 * A delivery port wrapper that injects commit failures, as the tampering store injects bad reads: real atomic
 * delivery into a private temporary folder, whose commit fails at the rename (the spool written and synced, the
 * target never replaced) while the behaviour is `commit-failure`.
 */
export class FaultInjectingDelivery implements OutputDelivery {
  behavior: DeliveryBehavior = 'commit';
  /** Targets whose commit was failed on purpose, in order. */
  readonly failed: string[] = [];
  private root: string | undefined;
  private inner: AtomicFileDelivery | undefined;

  commit(target: string, content: string): Promise<DeliveryCommit> {
    if (this.inner === undefined) {
      this.root = mkdtempSync(join(tmpdir(), 'coven-conformance-delivery-'));
      this.inner = new AtomicFileDelivery(this.root, { beforeRename: (_spool, path) => this.beforeRename(path) });
    }
    return this.inner.commit(target, content);
  }

  /** Removes the temporary delivery root, if a delivery made one. */
  close(): void {
    if (this.root !== undefined) rmSync(this.root, { recursive: true, force: true });
    this.root = undefined;
    this.inner = undefined;
  }

  private async beforeRename(path: string): Promise<void> {
    if (this.behavior !== 'commit-failure') return;
    this.failed.push(path);
    throw new Error('injected fault: renaming the synced spool over the target failed');
  }
}

import { describe, expect, test } from 'vitest';
import { ERROR_HTTP_STATUS } from '../../src/contract/errors.js';
import * as ops from '../../src/testkit/conformance/authority-ops.js';
import { harness, type Harness } from '../support/engine-harness.js';
import { command } from '../support/commands.js';
import { dailyBinding } from '../support/authority-binding.js';

const at = (time: string) => `2026-03-02T${time}.000Z`;

const binding = (approval: Record<string, unknown>) => dailyBinding({ approval });

async function bound(approval: Record<string, unknown>): Promise<Harness> {
  const h = await harness();
  for (const a of await ops.applyBindings({ engine: h.engine, clock: h.clock }, [binding(approval)]))
    expect(a.outcome, JSON.stringify(a.error)).toBe('committed');
  return h;
}

let keys = 0;
async function runNow(h: Harness, time: string) {
  h.clock.set(at(time));
  const r = await h.engine.commands.handle(
    command('occurrence.runNow.v1', { automationId: 'daily' }, { adoptionKey: `approval-run-${++keys}` }),
  );
  expect(r.outcome, JSON.stringify(r.error)).toBe('committed');
  return String(r.result!.occurrenceId);
}

const occurrence = async (h: Harness, id: string) => (await h.read.occurrences()).find((o) => o.occurrenceId === id)!;

/** Ticks until every occurrence settled (the simulated session takes a minute), with a bounded number of passes. */
async function settle(h: Harness, from: string) {
  h.clock.set(from);
  for (let i = 0; i < 5; i++) {
    h.clock.advance({ seconds: 61 });
    await h.engine.tick();
    if ((await h.read.occurrences()).every((o) => !['claimed', 'running', 'dispatching'].includes(String(o.state))))
      return;
  }
  throw new Error('occurrences did not settle within 5 passes');
}

describe('approvals: single-use nonces scoped to one automation, with an expiry', () => {
  test('an approval authorises exactly one run: consumed once (approval.consumed), a second run is a replay', async () => {
    const h = await bound({ required: true, nonce: 'n1', ttlMinutes: 120 });
    h.clock.set(at('08:30:00'));
    const granted = await ops.grantApproval(
      { engine: h.engine, clock: h.clock },
      {
        automationId: 'daily',
        nonce: 'n1',
        ttlMinutes: 120,
      },
    );
    expect(granted.outcome).toBe('committed');
    const first = await runNow(h, '08:40:00');
    expect(h.runtime.launches).toHaveLength(1);
    await settle(h, at('08:40:00'));
    expect(await occurrence(h, first)).toMatchObject({ state: 'succeeded' });
    const second = await runNow(h, '08:50:00');
    expect(h.runtime.launches).toHaveLength(1);
    expect((await occurrence(h, second)).stateReason).toMatch(/^authority: approval replayed: nonce n1 was consumed/);
    const consumed = (await h.read.feed()).filter((e) => e.kind === 'approval.consumed');
    expect(consumed).toHaveLength(1);
    expect(consumed[0]).toMatchObject({ occurrenceId: first, payload: { approvalNonce: 'n1' } });
    // Granting the nonce again cannot revive it.
    const again = await ops.grantApproval(
      { engine: h.engine, clock: h.clock },
      {
        automationId: 'daily',
        nonce: 'n1',
        ttlMinutes: 120,
      },
    );
    expect(again.error).toMatchObject({ code: 'ILLEGAL_TRANSITION' });
  });

  test('an approval past its TTL (the binding may shorten it) no longer authorises', async () => {
    const h = await bound({ required: true, nonce: 'n2', ttlMinutes: 5 });
    h.clock.set(at('08:00:00'));
    await ops.grantApproval(
      { engine: h.engine, clock: h.clock },
      { automationId: 'daily', nonce: 'n2', ttlMinutes: 60 },
    );
    const late = await runNow(h, '08:06:00');
    expect(h.runtime.launches).toHaveLength(0);
    expect((await occurrence(h, late)).stateReason).toMatch(/^authority: approval expired: .*08:05:00\.000Z/);
  });

  test("another automation's approval is refused as such, even past the binding's TTL (scope before state)", async () => {
    const h = await bound({ required: true, nonce: 'n3', ttlMinutes: 60 });
    h.clock.set(at('08:00:00'));
    await ops.grantApproval(
      { engine: h.engine, clock: h.clock },
      { automationId: 'other', nonce: 'n3', ttlMinutes: 1440 },
    );
    const deputy = await runNow(h, '09:30:00');
    expect(h.runtime.launches).toHaveLength(0);
    expect((await occurrence(h, deputy)).stateReason).toMatch(
      /^authority: approval issued for a different automation: nonce n3 authorises other, not daily/,
    );
  });

  test('expireApprovals ends open approvals now: sealed, never consumed, never granted again', async () => {
    const h = await bound({ required: true, nonce: 'n4', ttlMinutes: 120 });
    const handle = { engine: h.engine, clock: h.clock };
    h.clock.set(at('08:00:00'));
    await ops.grantApproval(handle, { automationId: 'daily', nonce: 'n4', ttlMinutes: 120 });
    await ops.grantApproval(handle, { automationId: 'other', nonce: 'o4', ttlMinutes: 120 });
    const expired = await ops.expireApprovals(handle, { automationId: 'daily', at: at('08:10:00') });
    expect(expired.result).toEqual({ expired: ['n4'], expiredAt: at('08:10:00') });
    const late = await runNow(h, '08:11:00');
    expect(h.runtime.launches).toHaveLength(0);
    expect((await occurrence(h, late)).stateReason).toMatch(/^authority: approval expired: .*08:10:00\.000Z/);
    const regrant = await ops.grantApproval(handle, { automationId: 'daily', nonce: 'n4', ttlMinutes: 120 });
    expect(regrant.error).toMatchObject({ code: 'ILLEGAL_TRANSITION' });
    // Only the open approval of the named automation ended; expiring again finds nothing open.
    expect((await ops.expireApprovals(handle, { automationId: 'daily' })).result).toMatchObject({ expired: [] });
    expect((await ops.expireApprovals(handle, {})).result).toMatchObject({ expired: ['o4'] });
  });

  test('without a nonce in the binding, the oldest open approval of this automation is consumed', async () => {
    const h = await bound({ required: true });
    const handle = { engine: h.engine, clock: h.clock };
    h.clock.set(at('08:00:00'));
    await ops.grantApproval(handle, { automationId: 'other', nonce: 'o1', ttlMinutes: 60 });
    const refused = await runNow(h, '08:01:00');
    expect((await occurrence(h, refused)).stateReason).toMatch(/^authority: approval required/);
    await ops.grantApproval(handle, { automationId: 'daily', nonce: 'd1', ttlMinutes: 60 });
    await runNow(h, '08:02:00');
    expect(h.runtime.launches).toHaveLength(1);
  });
});

describe('the authority commands over the command API', () => {
  test('a held retry of a bound run is AUTHORITY_REQUIRED (403); registry refusals are typed', async () => {
    const h = await bound({ required: false });
    h.runtime.defaultBehavior = 'fail';
    h.clock.set(at('09:00:00'));
    await h.engine.tick();
    await settle(h, at('09:00:00'));
    const [run] = await h.read.runs();
    expect(run).toMatchObject({ state: 'failed' });
    const retry = await h.engine.commands.handle(
      command('attempt.retry.v1', { runId: run!.runId, priorAttemptNumber: 1, priorDisposition: 'failed' }),
    );
    expect(retry.error).toMatchObject({ code: 'AUTHORITY_REQUIRED', httpStatus: ERROR_HTTP_STATUS.AUTHORITY_REQUIRED });
    expect(retry.error!.httpStatus).toBe(403);
    const revokeUnknown = await h.engine.commands.handle(
      command('x-coven-automata.authority.familiar.revoke.v1', { familiarId: 'nobody' }),
    );
    expect(revokeUnknown.error).toMatchObject({ code: 'NOT_FOUND' });
    const badGrant = await h.engine.commands.handle(
      command('x-coven-automata.approval.grant.v1', { automationId: 'daily', nonce: 'x', ttlMinutes: 0 }),
    );
    expect(badGrant.error).toMatchObject({ code: 'VALIDATION_FAILED' });
  });

  test('a binding that names another automation or familiar is refused on write', async () => {
    const h = await harness();
    const wrong = await ops.applyBindings({ engine: h.engine, clock: h.clock }, [
      { ...binding({}), automationId: 'daily', familiarId: 'hex', familiarRevision: 0 },
    ]);
    expect(wrong.at(-1)!.error).toMatchObject({ code: 'VALIDATION_FAILED' });
  });
});

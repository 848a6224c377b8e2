import { describe, expect, test } from 'vitest';
import { isContractError } from '../../src/contract/errors.js';
import { ANONYMOUS_CALLER, OPERATOR_CALLER, type ReadCaller } from '../../src/domain/read-acl.js';
import { runDoctor } from '../../src/observability/run-doctor.js';
import { command, definitionBody } from '../support/commands.js';
import { harness, type Harness } from '../support/engine-harness.js';

const ANA = { as: 'principal', principalId: 'principal:ana' } as const;
const EVE: ReadCaller = { as: 'principal', principalId: 'principal:eve' };

/**
 * `daily`'s occurrence runs and its engine is gone three hours later (a stale-lease finding naming the occurrence),
 * `other` is an unrestricted draft; `daily` is granted to Ana.
 */
async function restrictedBacklog(): Promise<Harness> {
  const h = await harness();
  await h.ok(command('definition.create.v1', { definition: definitionBody('other') }));
  h.clock.set('2026-03-02T09:00:00.000Z');
  await h.engine.tick();
  await h.ok(command('x-coven-automata.acl.grant.v1', { automationId: 'daily', principalId: ANA.principalId }));
  h.clock.set('2026-03-02T12:00:00.000Z');
  return h;
}

/** Whether the report names `daily` anywhere (its occurrence ids start with it). */
const mentions = (report: unknown) => JSON.stringify(report).includes('daily');

async function firstOf(events: AsyncGenerator<unknown>): Promise<unknown> {
  const next = await events.next();
  await events.return(undefined);
  return next.value;
}

async function refusalOf(events: AsyncGenerator<unknown>): Promise<string | undefined> {
  try {
    await events.next();
    return undefined;
  } catch (error) {
    return isContractError(error) ? error.code : String(error);
  }
}

describe('the read ACL over the doctor and in-process subscriptions', () => {
  test('the doctor leaves a restricted automation out for a caller who may not read it, and only then', async () => {
    const h = await restrictedBacklog();
    const readers = await Promise.all([OPERATOR_CALLER, ANA].map((caller) => runDoctor(h.engine, { caller })));
    for (const report of [await runDoctor(h.engine), ...readers]) {
      expect(report.counts.running).toBe(1);
      expect(report.findings.map((f) => f.code)).toContain('occurrences.stale-lease');
      expect(mentions(report)).toBe(true);
    }
    for (const caller of [EVE, ANONYMOUS_CALLER]) {
      const report = await runDoctor(h.engine, { caller });
      expect(mentions(report)).toBe(false);
      expect(report.counts).toMatchObject({ due: 0, eligible: 0, claimed: 0, running: 0 });
      expect(report.findings.map((f) => f.code)).not.toContain('occurrences.stale-lease');
    }
  });

  test('commands.subscribe with a caller: refused for a restricted stream or the feed, served once readable', async () => {
    const h = await restrictedBacklog();
    const daily = { kind: 'automation', id: 'daily' } as const;
    const feed = { kind: 'feed', id: 'all' } as const;
    expect(await refusalOf(h.engine.commands.subscribe(daily, { caller: EVE }))).toBe('AUTHORITY_REQUIRED');
    expect(await refusalOf(h.engine.commands.subscribe(feed, { caller: ANONYMOUS_CALLER }))).toBe('AUTHORITY_REQUIRED');
    expect(await firstOf(h.engine.commands.subscribe(daily, { caller: ANA }))).toMatchObject({ automationId: 'daily' });
    expect(await firstOf(h.engine.commands.subscribe(feed))).toBeDefined();
    await h.ok(command('x-coven-automata.acl.lift.v1', { automationId: 'daily' }));
    expect(await firstOf(h.engine.commands.subscribe(daily, { caller: EVE }))).toMatchObject({ automationId: 'daily' });
  });

  test('a subscription that becomes restricted mid-stream ends with AUTHORITY_REQUIRED instead of delivering', async () => {
    const h = await restrictedBacklog();
    await h.ok(command('x-coven-automata.acl.lift.v1', { automationId: 'daily' }));
    const events = h.engine.commands.subscribe({ kind: 'automation', id: 'daily' }, { caller: EVE });
    expect((await events.next()).value).toMatchObject({ automationId: 'daily' });
    await h.ok(command('x-coven-automata.acl.grant.v1', { automationId: 'daily', principalId: ANA.principalId }));
    expect(await refusalOf(events)).toBe('AUTHORITY_REQUIRED');
  });
});

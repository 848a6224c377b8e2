import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { FunctionRuntime } from '../../src/runtime/function-runtime.js';
import { command } from '../support/commands.js';
import { addActiveDefinition, dashboardWorld, type DashboardWorld } from '../dashboard/world.js';

/**
 * The console's read routes over loopback TCP: bounded pages and cursors, the read ACL, the tokenless view,
 * the token check and the typed refusal of every bad parameter. No browser: the page's use of them is tested in
 * test/dashboard.
 */
describe('the console reads (GET /api/v1/console/*)', () => {
  let world: DashboardWorld;
  let runtime: FunctionRuntime;

  const get = async (path: string, token?: string) => {
    const response = await fetch(`${world.url}/api/v1/console/${path}`, {
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    });
    return { status: response.status, body: (await response.json()) as Record<string, never> };
  };

  beforeAll(async () => {
    runtime = new FunctionRuntime('coven-code', async (request) => ({
      outcome: request.automationId === 'secret' ? 'succeeded' : 'failed',
      output: `secret output of ${request.automationId}\n`,
    }));
    world = await dashboardWorld([], runtime);
    for (const id of ['alpha', 'beta', 'gamma', 'secret']) await addActiveDefinition(world.engine, id, { tags: [id] });
    for (const id of ['alpha', 'beta', 'gamma', 'secret'])
      expect((await world.engine.commands.handle(command('occurrence.runNow.v1', { automationId: id }))).outcome).toBe(
        'committed',
      );
    await runtime.drain();
    await world.pass(1);
    const grant = command('x-coven-automata.acl.grant.v1', { automationId: 'secret', principalId: 'principal:ana' });
    expect((await world.engine.commands.handle(grant)).outcome).toBe('committed');
  }, 60_000);

  afterAll(async () => {
    await world?.close();
  });

  test('pages follow the cursor: every row once, none past the limit', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await get(
        `definitions?limit=2${cursor === undefined ? '' : `&cursor=${cursor}`}`,
        world.daemon.token,
      );
      const body = page.body as unknown as { definitions: Array<{ automationId: string }>; matched: number };
      expect(body.definitions.length).toBeLessThanOrEqual(2);
      expect(body.matched).toBe(5);
      seen.push(...body.definitions.map((d) => d.automationId));
      cursor = (page.body as unknown as { cursor: { next?: string } }).cursor.next;
      pages += 1;
    } while (cursor !== undefined);
    expect(pages).toBe(3);
    expect(seen).toEqual(['alpha', 'beta', 'daily-notes', 'gamma', 'secret']);
  });

  test('held runs with their failure for the operator; the tokenless view withholds the output', async () => {
    const owner = (await get('runs?state=held', world.daemon.token)).body as unknown as {
      runs: Array<{ automationId: string; failure: { outputTail: string }; hold: { until: string } }>;
    };
    expect(owner.runs.map((r) => r.automationId).sort()).toEqual(['alpha', 'beta', 'gamma']);
    expect(owner.runs[0]!.failure.outputTail).toMatch(/^secret output of /);
    expect(owner.runs[0]!.hold.until).toMatch(/^2026-03-02T/);
    const anonymous = (await get('runs?state=held')).body as unknown as { runs: Array<{ failure: object }> };
    expect(anonymous.runs[0]!.failure).toMatchObject({ outputTail: '[redacted:output]' });
  });

  test('automations the read ACL restricts are left out for a tokenless caller, counts included', async () => {
    const owner = await get('occurrences?q=secret', world.daemon.token);
    expect((owner.body as unknown as { matched: number }).matched).toBe(1);
    const anonymous = await get('occurrences?q=secret');
    expect((anonymous.body as unknown as { matched: number }).matched).toBe(0);
    const counts = (await get('counts')).body as unknown as { definitions: { active: number } };
    expect(counts.definitions.active).toBe(4);
    const ownerCounts = (await get('counts', world.daemon.token)).body as unknown as {
      definitions: { active: number };
    };
    expect(ownerCounts.definitions.active).toBe(5);
  });

  test('a run id finds its occurrence; tags and time ranges filter', async () => {
    const runs = (await get('runs?automation=beta', world.daemon.token)).body as unknown as {
      runs: Array<{ runId: string; occurrenceId: string }>;
    };
    const { runId, occurrenceId } = runs.runs[0]!;
    const found = (await get(`occurrences?q=${runId}`, world.daemon.token)).body as unknown as {
      occurrences: Array<{ occurrenceId: string }>;
    };
    expect(found.occurrences.map((o) => o.occurrenceId)).toEqual([occurrenceId]);
    const tagged = (await get('occurrences?tag=gamma', world.daemon.token)).body as unknown as { matched: number };
    expect(tagged.matched).toBe(1);
    const later = (await get('occurrences?from=2026-03-03T00:00:00Z', world.daemon.token)).body as unknown as {
      matched: number;
    };
    expect(later.matched).toBe(0);
  });

  test('the session says whether the token is accepted', async () => {
    expect((await get('session', world.daemon.token)).body).toEqual({ authority: 'operator', tokenPresented: true });
    expect((await get('session', 'wrong')).body).toEqual({ authority: 'read-only', tokenPresented: true });
    expect((await get('session')).body).toEqual({ authority: 'read-only', tokenPresented: false });
  });

  test('the feed tail is the position the last entries follow', async () => {
    const tail = (await get('feed-tail?recent=5', world.daemon.token)).body as unknown as {
      after: number;
      last: number;
    };
    const feed = await world.store.read((reader) => reader.readFeed({ after: tail.after }));
    expect(feed.length).toBe(5);
    expect(feed.at(-1)!.position).toBe(tail.last);
  });

  test.each([
    ['occurrences?limit=0', 'limit'],
    ['runs?state=sleeping', 'state'],
    ['definitions?cursor=e30', 'cursor'],
    ['occurrences?to=03/02/2026', 'to'],
    ['occurrences?automation=../etc', 'automation'],
    ['runs-over-time?buckets=999', 'buckets'],
    ['feed-tail?recent=-1', 'recent'],
    ['counts?state=running', 'state'],
  ])('%s is 400 VALIDATION_FAILED naming %s', async (path, field) => {
    const answer = await get(path, world.daemon.token);
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({
      outcome: 'rejected',
      error: { code: 'VALIDATION_FAILED', details: { field } },
    });
  });
});

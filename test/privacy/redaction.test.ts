import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { REDACTED, redactEveryRule, redactPublished, redactText } from '../../src/contract/redaction.js';
import { propertyParameters } from '../support/property.js';
import { verifyIntegrity } from '../../src/contract/digest.js';
import { createEngineLogger } from '../../src/observability/logger.js';
import { runDoctor } from '../../src/observability/run-doctor.js';
import type { Observation } from '../../src/runtime/runtime.js';
import { SimulatedRuntime } from '../../src/runtime/simulated-runtime.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import * as ops from '../../src/testkit/conformance/authority-ops.js';
import { harness } from '../support/engine-harness.js';
import { command } from '../support/commands.js';

const PROMPT = 'Summarize the private family calendar.';
const ABSOLUTE = '/home/ana/private-notes';

describe('the redaction rules', () => {
  test("the lead test never passes a string a rule would change (strings built from the rules' own pieces)", () => {
    const pieces = fc.constantFrom(
      ...[
        '-----BEGIN RSA PRIVATE KEY-----',
        'sk-',
        'pk-',
        'ghp_',
        'xoxb-',
        'AKIA',
        'Bearer ',
        'bearer ',
        'PASSWORD',
        'token',
      ],
      ...[
        'api_key',
        'Access-Key',
        '=',
        ':',
        '/',
        '/home/ana',
        'C:\\',
        'c:\\x',
        ' ',
        '"',
        '(',
        'a',
        'Z9',
        '_',
        '-',
        'ABCDEFGHIJKLMNOP',
      ],
      ...['occ-manual-03cd8946', '2026-12-04T18:17:26.097Z', 'succeeded', 'task-1', 'desk-ABCDEFGHIJKLMNOPQ'],
    );
    fc.assert(
      fc.property(fc.array(pieces, { maxLength: 8 }), (parts) => {
        const text = parts.join('');
        expect(redactText(text)).toBe(redactEveryRule(text));
      }),
      propertyParameters('redaction lead test', 2000),
    );
    // And it does pass what has nothing to redact, returning the very string.
    expect(redactText('occ-manual-03cd8946 succeeded at 2026-12-04T18:17:26.097Z')).toBe(
      'occ-manual-03cd8946 succeeded at 2026-12-04T18:17:26.097Z',
    );
  });

  test('prompt-like keys, absolute path keys and credential patterns are replaced; ids and relative paths stay', () => {
    expect(
      redactPublished({
        prompt: PROMPT,
        systemPrompt: 'x',
        cwd: ABSOLUTE,
        relative: { cwd: 'work/proj' },
        note: `failed in ${ABSOLUTE}/run.log with token=abc123 and Bearer abcdefghijkl`,
        keys: ['sk-abcdefghijklmnopqrstu', 'ghp_abcdefghijklmnopqrstuvwxyz', 'AKIAABCDEFGHIJKLMNOP'],
        stream: 'automation/daily',
        policy: 'policy://authority/charm',
      }),
    ).toEqual({
      prompt: REDACTED.prompt,
      systemPrompt: REDACTED.prompt,
      cwd: REDACTED.path,
      relative: { cwd: 'work/proj' },
      note: `failed in ${REDACTED.path} with ${REDACTED.secret} and ${REDACTED.secret}`,
      keys: [REDACTED.secret, REDACTED.secret, REDACTED.secret],
      stream: 'automation/daily',
      policy: 'policy://authority/charm',
    });
    expect(redactText('C:\\Users\\ana\\secret.txt opened')).toBe(`${REDACTED.path} opened`);
  });
});

describe('published views of a definition with a prompt and an absolute working directory', () => {
  test('events, the doctor and log lines carry neither the prompt nor the path', async () => {
    const runtime = new SimulatedRuntime({ durationMs: 60_000 });
    runtime.enqueue('fail');
    const h = await harness({ store: new MemoryStore(), runtime, retry: { maxAttempts: 1, backoffPolicy: 'none' } });
    const got = await h.engine.commands.handle(command('definition.get.v1', { automationId: 'daily' }));
    const current = got.result!.definition as Record<string, unknown>;
    const { integrity: _i, ...body } = structuredClone(current);
    body.revision = Number(current.revision) + 1;
    body.action = { variant: 'familiarInvocation', version: 1, prompt: PROMPT, cwd: ABSOLUTE };
    const { integrityOf } = await import('../../src/contract/digest.js');
    const revised = await h.engine.commands.handle(
      command(
        'definition.revise.v1',
        { definition: { ...body, integrity: integrityOf(body) } },
        { expectedRevision: Number(current.revision) },
      ),
    );
    expect(revised.outcome, JSON.stringify(revised.error)).toBe('committed');
    h.clock.set('2026-03-02T09:00:00.000Z');
    const lines: string[] = [];
    const logger = createEngineLogger({ format: 'json', destination: { write: (l: string) => lines.push(l) } });
    for (let i = 0; i < 4; i++) {
      logger.onPass(await h.engine.tick());
      h.clock.advance({ minutes: 2 });
    }
    logger.warn(`launch failed for ${ABSOLUTE}`, { cwd: ABSOLUTE, prompt: PROMPT });
    const published = [JSON.stringify(await h.read.feed()), JSON.stringify(await runDoctor(h.engine)), lines.join('')];
    for (const view of published) {
      expect(view).not.toContain('private family calendar');
      expect(view).not.toContain(ABSOLUTE);
    }
    expect(lines.join('')).toContain(REDACTED.path);
  });
});

/** A runtime whose lost-session detail quotes a private path and a credential, as a real error message may. */
class LeakyRuntime extends SimulatedRuntime {
  override async observe(sessionId: string, now: Date): Promise<Observation> {
    const seen = await super.observe(sessionId, now);
    return seen.status === 'lost' ? { ...seen, detail: `ENOENT ${ABSOLUTE}/session.json token=abc123` } : seen;
  }
}

describe('receipts', () => {
  test('are sealed over redacted text: the published (redacted) copy is the sealed one and verifies', async () => {
    const runtime = new LeakyRuntime({ durationMs: 60_000 });
    runtime.defaultBehavior = 'lost-after-side-effect';
    const h = await harness({ runtime });
    h.clock.set('2026-03-02T09:00:00.000Z');
    for (let i = 0; i < 3; i++) {
      await h.engine.tick();
      h.clock.advance({ minutes: 2 });
    }
    const [receipt] = await h.read.receipts();
    expect(receipt).toMatchObject({ outcome: { disposition: 'ambiguous' } });
    const detail = String((receipt!.outcome as { detail: string }).detail);
    expect(detail).toBe(`ENOENT ${REDACTED.path} ${REDACTED.secret}`);
    expect(redactPublished(receipt)).toEqual(receipt);
    expect(verifyIntegrity(redactPublished(receipt!)).valid).toBe(true);
  });
});

describe('erase', () => {
  test('removes the prompt from every stored copy, tombstones the definition, keeps ids, history and receipts verifiable', async () => {
    const h = await harness();
    h.clock.set('2026-03-02T09:00:00.000Z');
    for (let i = 0; i < 3; i++) {
      await h.engine.tick();
      h.clock.advance({ minutes: 2 });
    }
    const receiptsBefore = await h.read.receipts();
    expect(receiptsBefore).toHaveLength(1);
    const feedBefore = await h.read.feed();
    const erased = await ops.erase({ engine: h.engine, clock: h.clock }, { automationId: 'daily' });
    expect(erased.outcome, JSON.stringify(erased.error)).toBe('committed');
    expect(erased.result).toMatchObject({ erased: true, tombstoned: true });
    const dump = await h.store.read(async (r) => {
      const kinds = ['definition', 'definition-revision', 'adoption', 'occurrence', 'run', 'attempt', 'receipt'];
      const records = await Promise.all(kinds.map((k) => r.list(k)));
      return JSON.stringify([records, await r.readFeed()]);
    });
    expect(dump).not.toContain('Write the daily notes.');
    expect(dump).not.toContain('work/notes');
    const receipts = await h.read.receipts();
    expect(receipts).toEqual(receiptsBefore);
    for (const receipt of receipts) expect(verifyIntegrity(receipt).valid).toBe(true);
    const feed = await h.read.feed();
    // History is kept: every event before the erasure is still there, unchanged.
    expect(feed.slice(0, feedBefore.length)).toEqual(feedBefore);
    expect(feed.filter((e) => e.kind === 'definition.tombstoned')).toHaveLength(1);
    expect((await h.read.occurrences()).map((o) => o.state)).toContain('succeeded');
    // Erasing again (already tombstoned) is allowed and finds nothing left to scrub.
    const again = await ops.erase({ engine: h.engine, clock: h.clock }, { automationId: 'daily' });
    expect(again.result).toMatchObject({ recordsScrubbed: 0 });
  });
});

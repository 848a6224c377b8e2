import { describe, expect, test } from 'vitest';
import { REDACTED } from '../../src/contract/redaction.js';
import { tokenlessView, WITHHELD } from '../../src/daemon/tokenless-view.js';
import { definitionBody } from '../support/commands.js';

describe('the view a tokenless loopback TCP caller gets', () => {
  test('a definition anywhere in an answer becomes its summary; output, prompts, paths and credentials go', () => {
    const body = definitionBody('daily');
    const answer = {
      outcome: 'committed',
      result: {
        definition: body,
        history: [{ definition: body, revision: 1 }],
        session: { stdout: 'the notes say…', output: 'done', transcript: 'all of it', exitCode: 0 },
        note: 'token=abc123 at /home/ana/notes/today.md',
        instructions: 'Read my journal',
      },
    };
    const view = tokenlessView(answer);
    const summary = {
      schemaVersion: body.schemaVersion,
      automationId: 'daily',
      revision: 1,
      integrity: body.integrity,
    };
    expect(view.result.definition).toEqual({
      ...summary,
      lifecycleState: 'draft',
      display: { name: 'Automation daily' },
      withheld: WITHHELD.definition,
    });
    expect(view.result.history[0]!.definition).toEqual(view.result.definition);
    expect(view.result.session).toEqual({
      stdout: WITHHELD.output,
      output: WITHHELD.output,
      transcript: WITHHELD.output,
      exitCode: 0,
    });
    expect(view.result.note).toBe(`${REDACTED.secret} at ${REDACTED.path}`);
    expect(view.result.instructions).toBe(REDACTED.prompt);
    expect(JSON.stringify(view)).not.toContain(body.action.prompt);
  });

  test('what is already published-safe comes back equal (a receipt, an engine detail, ids and states)', () => {
    const clean = {
      receipt: {
        receiptId: 'rcpt-1',
        outcome: { disposition: 'failed', detail: 'exit code 1' },
        integrity: { value: 'ab' },
      },
      definitions: [{ automationId: 'daily', name: 'Daily', lifecycleState: 'active', revision: 3 }],
    };
    expect(tokenlessView(clean)).toEqual(clean);
  });
});

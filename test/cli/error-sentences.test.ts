import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { errorLine } from '../../src/cli/error-line.js';
import { runCli } from '../support/run-cli.js';
import { activeDefinition, definitionFile } from './cli-fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'coven-cli-errors-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test('a failed conditional schema branch reads as one sentence naming the field, never `must match "then" schema`', async () => {
  const folder = mkdtempSync(join(dir, 'store-'));
  const store = join(folder, 'automations.json');
  await activeDefinition(store, folder, 'nightly');
  // backoffPolicy "fixed" makes backoffSeconds required (an if/then in the definition schema).
  const file = definitionFile(folder, 'nightly');
  const body = JSON.parse(readFileSync(file, 'utf8')) as { policies: { retry: Record<string, unknown> } };
  body.policies.retry = { maxAttempts: 2, backoffPolicy: 'fixed' };
  writeFileSync(file, JSON.stringify(body));
  const refused = await runCli('--store', store, 'apply', '-f', file);
  expect(refused).toMatchObject({
    code: 1,
    err: 'VALIDATION_FAILED (400): automation definition failed validation: /definition/policies/retry/backoffSeconds is required',
  });
  // The raw problems stay in the --json envelope for programs.
  const json = JSON.parse((await runCli('--store', store, '--json', 'apply', '-f', file)).out) as {
    error: { details: { problems: string[] } };
  };
  expect(json.error.details.problems).toContain('/policies/retry: must match "then" schema');
  // The envelope's own schema problems (its message quotes them) read the same way, once.
  const envelope = await runCli('--store', store, 'get', 'nightly', '--revision', '1.5');
  expect(envelope).toMatchObject({
    code: 1,
    err: 'VALIDATION_FAILED (400): command envelope is invalid: /payload/revision must be integer',
  });
}, 60_000);

test('errorLine: a branch problem is dropped beside a specific one at or under its path, else named as a sentence', () => {
  const line = (problems: string[], field?: string) =>
    errorLine({
      code: 'VALIDATION_FAILED',
      httpStatus: 400,
      message: 'automation definition failed validation',
      details: { ...(field === undefined ? {} : { field }), problems },
    });
  const head = 'VALIDATION_FAILED (400): automation definition failed validation: ';
  expect(
    line(
      ["/binding: must have required property 'familiarId'", '(root): must match "then" schema'],
      'payload.definition',
    ),
  ).toBe(`${head}/definition/binding/familiarId is required`);
  expect(line(['/policies/retry: must match "else" schema'], 'payload.definition')).toBe(
    `${head}/definition/policies/retry does not meet a condition that its other fields set`,
  );
  expect(line(['(root): must match "then" schema'])).toBe(
    `${head}the input does not meet a condition that its other fields set`,
  );
  // A branch problem elsewhere is not hidden by an unrelated one.
  expect(line(['/a: must be string', '/b: must match "then" schema'])).toBe(
    `${head}/a must be string; /b does not meet a condition that its other fields set`,
  );
  expect(line(["(root): must have required property 'intent'"])).toBe(`${head}/intent is required`);
  expect(line(['not a schema problem'])).toBe(`${head}not a schema problem`);
});

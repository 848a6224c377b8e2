import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { packageRoot } from '../../src/contract/package-root.js';
import { integrityOf } from '../../src/contract/digest.js';
import { packagesAmong, watchModules } from '../support/loaded-modules.js';

// Both tests build dist/, so they live in one file: vitest runs a file's tests in order, never side by side.
const dir = mkdtempSync(join(tmpdir(), 'coven-pack-'));
const root = packageRoot();
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const HEAVY = ['fast-check', '@xstate/graph', '@viz-js/viz', '@statelyai/inspect', 'vitest', 'better-sqlite3'];
const run = (cmd: string, args: string[], cwd: string) =>
  execFileSync(cmd, args, {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1' },
  });

test('npm pack installs in a clean folder; the examples and the CLI run against the installed package', () => {
  run('npm', ['pack', '--pack-destination', dir, '--silent'], root);
  const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'))!;
  const app = join(dir, 'app');
  cpSync(join(root, 'examples'), app, { recursive: true });
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', join(dir, tarball)], app);
  expect(run('node', ['embed-engine.mjs'], app)).toMatch(
    /run run-daily-notes-\d+: succeeded; receipt receipt-attempt-run-daily-notes-\d+-1 verifies: true/,
  );
  expect(run('node', ['read-model.mjs'], app)).toMatch(/'daily|twice-daily-\d+': 'succeeded'/);
  // The installed engine entry is light, and the testkit resolves through the package's exports.
  writeFileSync(join(app, 'light.mjs'), "import 'coven-automata';\n");
  const light = watchModules(['light.mjs'], { cwd: app });
  expect(light.urls.some((url) => url.includes('/node_modules/coven-automata/dist/src/engine/'))).toBe(true);
  expect(packagesAmong(light.urls, HEAVY)).toEqual([]);
  // The published types: a consumer of the typed embedding API compiles under --strict against the installed dist/.
  writeFileSync(join(app, 'typed.mts'), TYPED_CONSUMER);
  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  const strict = ['--strict', '--noEmit', '--skipLibCheck', '--module', 'nodenext', '--moduleResolution', 'nodenext'];
  run(
    process.execPath,
    [
      tsc,
      ...strict,
      '--target',
      'es2022',
      '--typeRoots',
      join(root, 'node_modules/@types'),
      '--types',
      'node',
      'typed.mts',
    ],
    app,
  );
  expect(
    run('node', ['-e', "import('coven-automata/testkit').then((t) => console.log(typeof t.runInvariantSuite))"], app),
  ).toBe('function\n');
  expect(run('npx', ['--no-install', 'coven-automata', 'machines'], app)).toContain(
    'coven.automations.v1: 4 lifecycle machines, 10 invariants',
  );
  const receipt = { receiptId: 'receipt-example', outcome: { disposition: 'succeeded' } };
  writeFileSync(join(app, 'receipt.json'), JSON.stringify({ ...receipt, integrity: integrityOf(receipt) }));
  expect(run('npx', ['--no-install', 'coven-automata', 'verify', 'receipt.json'], app)).toMatch(/^valid: [0-9a-f]{64}/);
  writeFileSync(
    join(app, 'tampered.json'),
    JSON.stringify({ ...receipt, outcome: { disposition: 'failed' }, integrity: integrityOf(receipt) }),
  );
  const failure = (() => {
    try {
      run('npx', ['--no-install', 'coven-automata', 'verify', 'tampered.json'], app);
      return undefined;
    } catch (error) {
      return error as { status: number; stdout: string };
    }
  })();
  expect(failure?.status).toBe(1);
  expect(failure?.stdout).toMatch(/^INVALID: carried [0-9a-f]{64}, computed [0-9a-f]{64}/);
}, 480_000);

/** Reads a typed result and a narrowed error with no cast: fails to compile if the published types lose either. */
const TYPED_CONSUMER = `
import { AutomationClient, createEngine, defineFunctionAutomation, MemoryStore } from 'coven-automata';
const notes = defineFunctionAutomation({ id: 'notes', schedule: 'FREQ=DAILY;BYHOUR=9', handler: async () => 'ok' });
const engine = createEngine({ store: new MemoryStore(), runtimes: [notes.runtime] });
const client = new AutomationClient(engine);
const started = await client.runNow('notes');
if (!started.ok) console.error(started.error.code);
else console.log(started.value.occurrenceId.length);
const response = await engine.commands.handle({ schemaVersion: 'coven.automations.v1', command: 'definition.get.v1',
  adoptionKey: 'get-notes', origin: { principal: { principalId: 'me' }, channel: 'sdk' },
  intent: { statement: 'read' }, payload: { automationId: 'notes' } });
if (response.outcome === 'rejected') console.error(response.error.httpStatus);
else console.log(response.result.definition.trigger.schedule.rrule);
`;

/** The README and every guide under docs/ (folded guides only: docs/pending holds drafts). */
function documents(): string[] {
  const guides = readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => join('docs', f));
  return ['README.md', ...guides];
}

/** Every ```sh block of a document, in order, each a script of its own. */
function shellBlocks(document: string): string[] {
  const text = readFileSync(join(root, document), 'utf8');
  return [...text.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

/** Commands this test cannot run from inside `npm test`, each with the reason it prints. */
const NOT_HERE: Array<[RegExp, string]> = [
  [/^npm test$/, 'npm test is the run executing this test'],
  // The conformance examples read upstream's files beside the checkout; a clone elsewhere has none.
  ...(existsSync(join(root, '..', 'shared', 'upstream'))
    ? []
    : ([[/\.\.\/shared\/upstream\//, 'upstream artifacts are not beside this checkout']] as Array<[RegExp, string]>)),
];

/**
 * The block as run here: what the documents keep in `.coven/` (and the demo's default store there) goes to a
 * temporary folder instead, so the suite leaves no store in the checkout and the documents' sessions start as
 * fresh after `npm test` as before it; a daemon's documented port becomes a free one. `npm ci` is CI's own first
 * step (it reinstalls node_modules under the running test), so only the rest of its line runs here.
 */
function inScratch(block: string, scratch: string, port: number): string {
  return block
    .split('\n')
    .map((line) => {
      const command = line.replace(/\s+#.*$/, '').trim();
      const skip = NOT_HERE.find(([pattern]) => pattern.test(command));
      if (skip === undefined) return line;
      console.info(`documented command not run here: ${command} (${skip[1]})`);
      return '';
    })
    .join('\n')
    .replace(/^npm ci && /gm, '')
    .replace(/^npm start$/gm, `npm start -- --file ${scratch}/demo.json`)
    .replace(/\.coven\b/g, scratch)
    .replace(/127\.0\.0\.1:8790\b/g, `127.0.0.1:${port}`);
}

/** A TCP port nothing listens on now (the kernel's pick, released at once). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

test('every shell block in the README and the guides runs and exits 0', async () => {
  let blocks = 0;
  for (const document of documents()) {
    const scratch = mkdtempSync(join(dir, 'docs-'));
    for (const raw of shellBlocks(document)) {
      blocks += 1;
      const script = inScratch(raw, scratch, await freePort());
      const commands = script.split('\n').filter((line) => line.replace(/#.*$/, '').trim() !== '').length;
      try {
        execFileSync('bash', ['-e', '-c', script], {
          cwd: root,
          stdio: 'pipe',
          timeout: 180_000 * Math.max(1, commands),
          env: { ...process.env, NO_COLOR: '1' },
        });
      } catch (error) {
        const e = error as { status: number; stdout?: Buffer; stderr?: Buffer };
        throw new Error(
          `${document}: shell block failed (${e.status}):\n${script}\n${String(e.stderr ?? '')}${String(e.stdout ?? '').slice(-2000)}`,
          { cause: error },
        );
      }
    }
  }
  expect(blocks).toBeGreaterThan(6);
}, 1_500_000);

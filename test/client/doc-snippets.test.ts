import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, expect, test } from 'vitest';

const root = resolve(import.meta.dirname, '../..');

/** README.md and every Markdown file under docs/, in a stable order. */
function markdownFiles(): string[] {
  const found = [join(root, 'README.md')];
  const walk = (folder: string) => {
    for (const entry of readdirSync(folder, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) found.push(path);
    }
  };
  walk(join(root, 'docs'));
  return found;
}

interface Snippet {
  /** Where the block's fence opens: `README.md:190`. */
  origin: string;
  code: string;
}

/** Every ```ts and ```typescript block of a Markdown text. */
function tsBlocks(text: string, file: string): Snippet[] {
  const blocks: Snippet[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(ts|typescript)\s*$/.exec(lines[i]!);
    if (open === null) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i]!); i++) body.push(lines[i]!.slice(open[1]!.length));
    blocks.push({ origin: `${file}:${start + 1}`, code: body.join('\n') });
  }
  return blocks;
}

const folders: string[] = [];
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/**
 * Compiles each snippet as its own ES module under `tsc --strict`, with `coven-automata` (and its `testkit`,
 * `daemon` and `otel` entries) mapped to the package's source entries, and answers the diagnostics by snippet.
 */
function compileSnippets(snippets: Snippet[]): string[] {
  const folder = mkdtempSync(join(tmpdir(), 'coven-snippets-'));
  folders.push(folder);
  const files = snippets.map((snippet, n) => {
    const file = join(folder, `snippet-${n}.mts`);
    writeFileSync(file, `${snippet.code}\nexport {};\n`);
    return file;
  });
  const options: ts.CompilerOptions = {
    strict: true,
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2023.d.ts'],
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    skipLibCheck: true,
    noEmit: true,
    types: ['node'],
    typeRoots: [join(root, 'node_modules/@types')],
    paths: {
      'coven-automata': [join(root, 'src/index.ts')],
      'coven-automata/testkit': [join(root, 'src/testkit/index.ts')],
      'coven-automata/daemon': [join(root, 'src/daemon/index.ts')],
      'coven-automata/otel': [join(root, 'src/observability/otel.ts')],
    },
  };
  const program = ts.createProgram(files, options);
  const problems = ts.getPreEmitDiagnostics(program).filter((d) => d.file === undefined);
  const text = problems.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  files.forEach((file, n) => {
    const source = program.getSourceFile(file)!;
    for (const d of [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]) {
      const { line } = source.getLineAndCharacterOfPosition(d.start ?? 0);
      const message = ts.flattenDiagnosticMessageText(d.messageText, '\n');
      text.push(`${snippets[n]!.origin} (+${line + 1}): TS${d.code} ${message}`);
    }
  });
  return text;
}

const snippets = markdownFiles().flatMap((file) => tsBlocks(readFileSync(file, 'utf8'), relative(root, file)));

/** A block that must fail: an unnarrowed error read and a result field no command has. */
const planted = [
  "import { AutomationClient, createEngine, MemoryStore } from 'coven-automata';",
  'const client = new AutomationClient(createEngine({ store: new MemoryStore(), runtimes: [] }));',
  'const engine = createEngine({ store: new MemoryStore(), runtimes: [] });',
  "const response = await engine.commands.handle({ schemaVersion: 'coven.automations.v1',",
  "  command: 'definition.get.v1', adoptionKey: 'k', origin: { principal: { principalId: 'p' }, channel: 'sdk' },",
  "  intent: { statement: 's' }, payload: { automationId: 'a' } });",
  'console.log(response.error.code);',
  "const got = await client.get('a');",
  'if (got.ok) console.log(got.value.lifecycle);',
].join('\n');

// One program for every block (the planted one included): loading the package's sources is most of the cost.
let problems: string[] = [];
beforeAll(() => {
  problems = compileSnippets([...snippets, ...tsBlocks(`text\n\`\`\`ts\n${planted}\n\`\`\`\n`, 'planted.md')]);
}, 240_000);

test('every TypeScript block of README.md and docs/ compiles under tsc --strict against the public API', () => {
  // The embedding guide alone has several; finding none would mean the extraction is broken.
  expect(snippets.length).toBeGreaterThanOrEqual(5);
  expect(snippets.some((s) => s.origin.startsWith('README.md'))).toBe(true);
  expect(snippets.filter((s) => s.origin.startsWith('docs/embedding.md')).length).toBeGreaterThanOrEqual(4);
  expect(problems.filter((p) => !p.startsWith('planted.md'))).toEqual([]);
});

test('the check bites: an unnarrowed error read and a wrong result field are reported with their block', () => {
  expect(problems.filter((p) => p.startsWith('planted.md'))).toEqual([
    expect.stringMatching(/^planted\.md:2 \(\+7\): TS18048 /),
    expect.stringMatching(/^planted\.md:2 \(\+9\): TS2339 Property 'lifecycle' does not exist/),
  ]);
});

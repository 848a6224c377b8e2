/**
 * Folder layering for issue 22, checked by `npm run lint:deps`.
 *
 * Every dependency between project modules must match an `allowed` rule; anything else is reported as
 * `not-in-allowed`. Rules name folders, never files, so a new file in an allowed folder needs no change here.
 * npm packages and node: builtins are free except where a `forbidden` rule says otherwise.
 */

/** Each src/ folder, lowest layer first, with the folders it may import (besides itself). */
const BELOW_DOMAIN = [
  'contract',
  'spec',
  'guards',
  'machines',
  'schedule',
  'clock',
  'store',
  'runtime',
  'actors',
  'changefeed',
];
const WITH_DOMAIN = [...BELOW_DOMAIN, 'domain'];
/** The four contract actors and retention: each sits on domain and the ports, never on a sibling. */
const CONTRACT_ACTORS = ['command-handler', 'scheduler', 'dispatcher', 'worker', 'retention'];
/** Test and verification support: may use anything but the CLI. */
const TESTKIT = ['testkit'];
const PRODUCTION = [...WITH_DOMAIN, ...CONTRACT_ACTORS, 'engine'];

const LAYERS = {
  contract: [],
  spec: ['contract'],
  guards: ['contract'],
  machines: ['guards'],
  schedule: ['contract'],
  clock: [],
  store: ['contract'],
  runtime: ['contract'],
  actors: ['contract', 'store', 'machines'],
  changefeed: ['contract', 'store', 'clock'],
  domain: BELOW_DOMAIN,
  ...Object.fromEntries(CONTRACT_ACTORS.map((actor) => [actor, WITH_DOMAIN])),
  engine: PRODUCTION,
  // The typed embedding API: builders and a client over an engine's command handler.
  client: PRODUCTION,
  observability: PRODUCTION,
  daemon: [...PRODUCTION, 'observability'],
  ...Object.fromEntries(TESTKIT.map((kit) => [kit, [...PRODUCTION, 'observability', 'daemon', ...TESTKIT]])),
  cli: [...PRODUCTION, 'observability', 'daemon', ...TESTKIT, 'cli'],
  // The browser app: bundled by Vite for the page, imports no project module, and nothing imports it.
  dashboard: [],
};

/** machines/ lives at the repository root; every other layer is a folder under src/. */
const folderPath = (folder) => (folder === 'machines' ? '^machines/' : `^src/${folder}/`);
const anyOf = (folders) => folders.map(folderPath).join('|');

const layerRules = Object.entries(LAYERS).map(([folder, allowed]) => ({
  from: { path: folderPath(folder) },
  to: { path: anyOf([folder, ...allowed]) },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Module cycles make load order fragile and hide the layering; break the cycle at the lower layer.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'json-store-internals',
      severity: 'error',
      comment: 'The JSON store is used through src/store/json/index.ts; its files are described in its FORMAT.md.',
      from: { path: '^src/', pathNot: '^src/store/json/' },
      to: { path: '^src/store/json/', pathNot: '^src/store/json/index\\.ts$' },
    },
    {
      name: 'sqlite-store-internals',
      severity: 'error',
      comment:
        'The SQLite store is used through src/store/sqlite/index.ts, which loads better-sqlite3 only when opened.',
      from: { path: '^src/', pathNot: '^src/store/sqlite/' },
      to: { path: '^src/store/sqlite/', pathNot: '^src/store/sqlite/index\\.ts$' },
    },
    {
      name: 'postgres-store-internals',
      severity: 'error',
      comment: 'The PostgreSQL store is used through src/store/postgres/index.ts, which loads pg only when opened.',
      from: { path: '^src/', pathNot: '^src/store/postgres/' },
      to: { path: '^src/store/postgres/', pathNot: '^src/store/postgres/index\\.ts$' },
    },
    {
      name: 'no-src-to-test',
      severity: 'error',
      comment: 'Shipped code must not depend on the test tree.',
      from: { path: '^src/' },
      to: { path: '^test/' },
    },
    {
      name: 'no-test-libraries-in-production',
      severity: 'error',
      comment: 'Property-testing and graph-walking libraries belong to the testkit and the CLI only.',
      from: { path: `^src/index\\.ts$|^machines/|${anyOf(PRODUCTION)}` },
      to: { path: '(^|/)node_modules/(fast-check|@xstate/graph|vitest|@fast-check/vitest)/' },
    },
    {
      name: 'optional-packages-in-cli-only',
      severity: 'error',
      comment:
        'The diagram renderer and the inspector are optional peer dependencies the CLI loads in its command actions; nothing else may need them.',
      from: { pathNot: '^src/cli/' },
      to: { path: '(^|/)node_modules/(@viz-js/viz|@statelyai/inspect)/' },
    },
  ],
  allowed: [
    {
      comment: 'npm packages are free (see no-test-libraries-in-production)',
      from: {},
      to: { path: '(^|/)node_modules/' },
    },
    { comment: 'node builtins are free', from: {}, to: { dependencyTypes: ['core'] } },
    ...layerRules,
    {
      comment:
        'The generated state constants import nothing: guards compare against them without depending on the machines that import the guards.',
      from: { path: '^src/guards/' },
      to: { path: '^machines/(states|extension-states)\\.ts$' },
    },
    {
      comment:
        'The browser app compares states through the generated constants; that file imports nothing, so the page bundles no engine code.',
      from: { path: '^src/dashboard/' },
      to: { path: '^machines/states\\.ts$' },
    },
    {
      comment:
        'The page and the CLI share when a lifecycle command is already done; that file imports only the state constants.',
      from: { path: '^src/dashboard/' },
      to: { path: '^src/domain/lifecycle-done\\.ts$' },
    },
    {
      comment:
        "The page reads the console's rows through the types the daemon writes them with; that file imports nothing.",
      from: { path: '^src/dashboard/' },
      to: { path: '^src/daemon/console-rows\\.ts$' },
    },
    {
      comment: 'The page and the CLI format wall times alike; that file imports nothing.',
      from: { path: '^src/dashboard/' },
      to: { path: '^src/domain/wall-time\\.ts$' },
    },
    {
      comment:
        'The page draws the contract machines from a module its build generates (src/dashboard/machines-plugin.ts): the spec and its Graphviz drawings, no code.',
      from: { path: '^src/dashboard/' },
      to: { path: '^virtual:coven-machines$' },
    },
    {
      comment: 'The package entry point re-exports the engine, not its test and CLI tooling.',
      from: { path: '^src/index\\.ts$' },
      to: { path: anyOf([...PRODUCTION, 'client']) },
    },
  ],
  allowedSeverity: 'error',
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|coverage)/' },
    // Type-only imports couple layers as much as value imports do.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
      extensions: ['.ts', '.js', '.mjs', '.cjs', '.d.ts'],
    },
    reporterOptions: {
      text: { highlightFocused: true },
    },
  },
};

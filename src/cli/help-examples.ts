import type { Command } from 'commander';

/**
 * What each command does, where its registration says only the contract command it sends, and an example of
 * it, keyed by the command's path (`acl grant`). Every command the program registers has an entry: a test
 * walks the program and fails naming any command without one.
 */
const HELP: Readonly<Record<string, { what?: string; example: string }>> = {
  init: { example: 'coven-automata init' },
  apply: { example: 'coven-automata apply -f examples/daily-notes.json' },
  activate: { example: 'coven-automata activate daily-notes' },
  pause: { example: 'coven-automata pause daily-notes --reason "holiday"' },
  disable: { example: 'coven-automata disable daily-notes' },
  enable: { example: 'coven-automata enable daily-notes && coven-automata activate daily-notes' },
  tombstone: { example: 'coven-automata tombstone daily-notes --reason "replaced"' },
  'run-now': { example: 'coven-automata run-now daily-notes' },
  cancel: { example: 'coven-automata cancel occ-manual-1f2e… --reason "wrong prompt"' },
  unquarantine: { example: 'coven-automata unquarantine daily-notes' },
  backfill: {
    example: 'coven-automata backfill daily-notes --from 2026-12-01T00:00:00Z --until 2026-12-03T23:59:59Z',
  },
  retry: { example: 'coven-automata retry run-occ-manual-1f2e…' },
  limits: { example: 'coven-automata limits show' },
  'limits show': { example: 'coven-automata limits show --json' },
  'limits set': { example: 'coven-automata limits set -f examples/limits.json --expect-revision 0' },
  recover: {
    example: 'coven-automata recover occ-1f2e… --determination failed_deterministic --statement "the job never ran"',
  },
  list: { example: 'coven-automata list --all' },
  get: { example: 'coven-automata get daily-notes --revision 2' },
  history: { example: 'coven-automata history daily-notes' },
  health: { example: 'coven-automata health daily-notes' },
  events: { example: 'coven-automata events --stream automation/daily-notes --after 3' },
  occurrences: { example: 'coven-automata occurrences --view running --automation daily-notes' },
  occurrence: { example: 'coven-automata occurrence occ-manual-1f2e… --history' },
  logs: { example: 'coven-automata logs run-occ-manual-1f2e… --follow' },
  receipt: { example: 'coven-automata receipt run-occ-manual-1f2e… --verify' },
  next: { example: 'coven-automata next daily-notes --count 3' },
  start: { example: 'coven-automata start --log-format json' },
  demo: { example: 'coven-automata demo --file /tmp/demo.sqlite' },
  walkthrough: { example: 'coven-automata walkthrough --file /tmp/walkthrough.json' },
  machines: { example: 'coven-automata machines' },
  invariants: { example: 'coven-automata invariants --runs 20 --seed 42' },
  conformance: { what: 'run the conformance corpus (conformance run)', example: 'coven-automata conformance run' },
  'conformance run': { example: 'coven-automata conformance run scenario.json --result result.json' },
  diagram: { example: 'coven-automata diagram --out /tmp/diagrams' },
  inspect: { example: 'coven-automata inspect --port 8787' },
  verify: { example: 'coven-automata verify receipt.json' },
  doctor: { example: 'coven-automata doctor --json' },
  familiar: { example: 'coven-automata familiar register charm' },
  'familiar register': {
    what: 'register a familiar, so bound automations may run as it (x-coven-automata.authority.familiar.register.v1)',
    example: 'coven-automata familiar register charm',
  },
  'familiar revoke': {
    what: 'revoke a familiar: its bound automations no longer dispatch (x-coven-automata.authority.familiar.revoke.v1)',
    example: 'coven-automata familiar revoke charm --reason "rotated"',
  },
  capabilities: { example: 'coven-automata capabilities coven-code sessions.launch' },
  'authority-availability': { example: 'coven-automata authority-availability unavailable --reason "maintenance"' },
  approval: { example: 'coven-automata approval grant daily-notes' },
  'approval grant': { example: 'coven-automata approval grant daily-notes --ttl-minutes 30' },
  'approval expire': { example: 'coven-automata approval expire --automation daily-notes' },
  acl: { example: 'coven-automata acl grant daily-notes user:ana' },
  'acl grant': {
    what: "let a principal read an automation's definition and history (x-coven-automata.acl.grant.v1)",
    example: 'coven-automata acl grant daily-notes user:ana',
  },
  'acl revoke': {
    what: "take a principal off an automation's read access list (x-coven-automata.acl.revoke.v1)",
    example: 'coven-automata acl revoke daily-notes user:ana',
  },
  'acl lift': { example: 'coven-automata acl lift daily-notes' },
  erase: { example: 'coven-automata erase daily-notes --reason "personal data"' },
  completion: { example: 'coven-automata completion bash > ~/.local/share/bash-completion/completions/coven-automata' },
};

/** The command's path under the program: `acl grant` for `coven-automata acl grant`. */
export function commandPath(command: Command): string {
  const names: string[] = [];
  for (let at: Command | null = command; at?.parent != null; at = at.parent) names.unshift(at.name());
  return names.join(' ');
}

/** Every command under `program`, depth first. */
export function allCommands(program: Command): Command[] {
  return program.commands.flatMap((command) => [command, ...allCommands(command)]);
}

/** Gives every registered command its description (where the table has a better one) and its example. */
export function addHelpExamples(program: Command): void {
  for (const command of allCommands(program)) {
    const help = HELP[commandPath(command)];
    if (help === undefined) continue;
    if (help.what !== undefined) command.description(help.what);
    command.addHelpText('after', `\nExample:\n  $ ${help.example}\n`);
  }
}

/** Whether the help table has an entry for a command path (the test that every command has one reads it). */
export const hasHelpEntry = (path: string): boolean => HELP[path] !== undefined;

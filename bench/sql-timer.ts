// Where a SQLite cell's time goes, statement by statement: a preload that times every better-sqlite3 call.
// After `npx tsc -p tsconfig.bench.json`:
//   node --import ./.bench-build/bench/sql-timer.js .bench-build/bench/slo-cell.js --store sqlite --history 1000 --definitions 1000
// At exit it prints to stderr the wall time spent inside SQLite per statement shape (`exec COMMIT`, `run
// INSERT INTO records …`), with call counts, largest first. `--cpu-prof` is the worse tool for this: its
// async stacks lose the caller after each await, and its sampling inflates native calls.
import Database from 'better-sqlite3';

type Timed = { ms: number; calls: number };
const spent = new Map<string, Timed>();

function account(key: string, started: number): void {
  const entry = spent.get(key) ?? { ms: 0, calls: 0 };
  entry.ms += performance.now() - started;
  entry.calls += 1;
  spent.set(key, entry);
}

// Statement is not exported by better-sqlite3; one prepared statement gives its prototype.
const probe = new Database(':memory:');
const statementPrototype = Object.getPrototypeOf(probe.prepare('SELECT 1')) as Record<
  'run' | 'get' | 'all',
  (...args: unknown[]) => unknown
> & { source?: string };
probe.close();

for (const method of ['run', 'get', 'all'] as const) {
  const original = statementPrototype[method];
  statementPrototype[method] = function timed(this: { source: string }, ...args: unknown[]) {
    const started = performance.now();
    try {
      return original.apply(this, args);
    } finally {
      account(`${method} ${this.source.replace(/\s+/g, ' ').slice(0, 70)}`, started);
    }
  };
}
const exec = Database.prototype.exec;
Database.prototype.exec = function timed(this: Database.Database, sql: string) {
  const started = performance.now();
  try {
    return exec.call(this, sql);
  } finally {
    account(`exec ${sql.replace(/\s+/g, ' ').slice(0, 40)}`, started);
  }
};

process.on('exit', () => {
  const rows = [...spent].sort((a, b) => b[1].ms - a[1].ms);
  const total = rows.reduce((sum, [, t]) => sum + t.ms, 0);
  process.stderr.write(`SQLite time: ${total.toFixed(0)} ms in ${rows.reduce((n, [, t]) => n + t.calls, 0)} calls\n`);
  for (const [key, t] of rows.slice(0, 20))
    process.stderr.write(`${t.ms.toFixed(0).padStart(8)} ms ${String(t.calls).padStart(9)}  ${key}\n`);
});

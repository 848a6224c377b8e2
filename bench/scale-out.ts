// The scale-out bench alone: one engine on SQLite and 1, 2 and 4 engine processes on one PostgreSQL database,
// side by side in one run (bench/scale-out/measure.ts says how). `npm run bench` runs the same cells.
//   npm run bench:scale-out -- [--rounds 3] [--due 1000] [--warm-up N]
// `--warm-up N` (150): each engine process first works a burst of N on a store of its own (scale-out/warm-up.ts),
// as a daemon that has been running would have; `--warm-up 0` measures engines started cold, as `npm run bench` does.
import { readFileSync } from 'node:fs';
import { measureScaleOut, SCALE_OUT_HEADER, scaleOutRows } from './scale-out/measure.js';
import { table } from './stats.js';

const arg = (name: string, fallback: number) => {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? fallback : Number(process.argv[at + 1]);
};
const rounds = arg('rounds', 3);
const due = arg('due', 1000);
const warmUp = arg('warm-up', 150);
const results = await measureScaleOut({ rounds, due, warmUp, log: (line) => process.stderr.write(`${line}\n`) });
console.log(
  `${due} definitions due at one instant, ${rounds} rounds${warmUp > 0 ? `, each engine warmed on ${warmUp}` : ''}; median (min–max); load ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`,
);
console.log(table(SCALE_OUT_HEADER, scaleOutRows(results, due)));

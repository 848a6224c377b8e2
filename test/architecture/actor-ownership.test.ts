import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/contract/package-root.js';

const SRC = join(packageRoot(), 'src');
/** The folder that owns each contract actor's transitions. */
const OWNER: Record<string, string> = {
  'command-handler': 'command_handler',
  scheduler: 'scheduler',
  dispatcher: 'dispatcher',
  worker: 'worker',
};
/** Folders below or beside the actors commit no contract transition of their own. */
const NO_TRANSITIONS = ['domain', 'retention', 'engine', 'store', 'runtime', 'changefeed'];

function actorLabels(folder: string): Array<{ file: string; actor: string }> {
  const found: Array<{ file: string; actor: string }> = [];
  for (const file of readdirSync(join(SRC, folder)).filter((f) => f.endsWith('.ts'))) {
    const text = readFileSync(join(SRC, folder, file), 'utf8');
    for (const m of text.matchAll(/\bactor: '([a-z_]+)'/g)) found.push({ file: `${folder}/${file}`, actor: m[1]! });
  }
  return found;
}

describe('each folder commits only its own contract actor’s transitions', () => {
  for (const [folder, actor] of Object.entries(OWNER)) {
    it(`${folder}/ labels every transition it sends '${actor}'`, () => {
      const labels = actorLabels(folder);
      expect(labels.length).toBeGreaterThan(0);
      const foreign = labels.filter((l) => l.actor !== actor);
      expect(foreign).toEqual([]);
    });
  }
  it(`${NO_TRANSITIONS.join(', ')} send no actor-labelled transition`, () => {
    expect(NO_TRANSITIONS.flatMap(actorLabels)).toEqual([]);
  });
});

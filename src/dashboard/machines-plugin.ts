import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Plugin } from 'vite';

/** The module id the page imports the machines from. */
const ID = 'virtual:coven-machines';
const RESOLVED = `\0${ID}`;

/**
 * Bundles the four contract machines into the page, so the console draws them with nothing fetched at run
 * time: their structure from spec/coven-automations/v1/state-machines.json (what `npm run generate` builds
 * machines/ from) and their Graphviz layout from docs/<entity>.svg (what `npm run diagrams` renders from the
 * same file, checked against it by `diagram --check` in the tests). The browser runs no layout engine and
 * needs no WebAssembly, so the page's Content-Security-Policy stays `script-src 'self'`.
 */
export function machinesPlugin(root: string): Plugin {
  const specFile = join(root, 'spec', 'coven-automations', 'v1', 'state-machines.json');
  return {
    name: 'coven-machines',
    resolveId: (id) => (id === ID ? RESOLVED : undefined),
    load(id) {
      if (id !== RESOLVED) return undefined;
      const spec = JSON.parse(readFileSync(specFile, 'utf8')) as { machines: Array<{ entity: string }> };
      const diagrams: Record<string, string> = {};
      for (const machine of spec.machines) {
        const file = join(root, 'docs', `${machine.entity}.svg`);
        this.addWatchFile(file);
        diagrams[machine.entity] = readFileSync(file, 'utf8');
      }
      this.addWatchFile(specFile);
      const machines = JSON.stringify(spec.machines);
      return `export const machines = ${machines};\nexport const diagrams = ${JSON.stringify(diagrams)};\n`;
    },
  };
}

import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { dotOf, withDiagrams } from '../spec/diagrams.js';
import { loadLifecycleSpec } from '../spec/lifecycle-spec.js';
import { packageRoot } from '../contract/package-root.js';
import { optionalPackage } from './optional-package.js';

/**
 * Renders each machine to `<out>/<machine>.svg` (Graphviz compiled to WebAssembly, no system install) and
 * refreshes the Mermaid section of docs/machines.md. With `check`, writes nothing and returns 1 if anything is stale.
 * @viz-js/viz is an optional peer dependency, loaded here only.
 */
export async function renderDiagrams(out: string, check: boolean): Promise<number> {
  const spec = loadLifecycleSpec();
  const { instance } = await optionalPackage('@viz-js/viz', 'diagram', () => import('@viz-js/viz'));
  const viz = await instance();
  const root = packageRoot();
  const outDir = resolve(root, out);
  const files = new Map<string, string>();
  for (const machine of spec.machines)
    files.set(
      join(outDir, `${machine.entity}.svg`),
      viz.renderString(dotOf(machine), { format: 'svg', engine: 'dot' }),
    );
  const guidePath = join(root, 'docs', 'machines.md');
  files.set(guidePath, withDiagrams(readFileSync(guidePath, 'utf8'), spec));
  const stale = [...files]
    .filter(([path, content]) => !existsSync(path) || readFileSync(path, 'utf8') !== content)
    .map(([path]) => path);
  if (check) {
    if (stale.length > 0) console.error(`stale diagrams (run \`npm run diagrams\`):\n  ${stale.join('\n  ')}`);
    else console.log('diagrams match the spec');
    return stale.length > 0 ? 1 : 0;
  }
  mkdirSync(outDir, { recursive: true });
  for (const path of stale) writeFileSync(path, files.get(path)!);
  console.log(stale.length === 0 ? 'diagrams already current' : `wrote ${stale.join(', ')}`);
  return 0;
}

import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import { machinesPlugin } from './machines-plugin.js';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

/**
 * The dashboard's build: src/dashboard → dist/dashboard, everything bundled (no CDN, nothing fetched at run
 * time), so the daemon serves it offline. `npm run build:dashboard`.
 */
export default defineConfig({
  root: here('.'),
  base: '/',
  publicDir: false,
  logLevel: 'warn',
  plugins: [machinesPlugin(here('../..'))],
  build: {
    outDir: here('../../dist/dashboard'),
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    // One small bundle; an inline module would need a CSP exception, a file does not.
    assetsInlineLimit: 0,
  },
});

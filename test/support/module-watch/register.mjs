// Loaded with `node --import`: registers hooks.mjs before the watched entry is imported.
import { register } from 'node:module';

register('./hooks.mjs', import.meta.url);

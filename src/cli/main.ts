#!/usr/bin/env node
import { main } from './program.js';

await main(process.argv.slice(2).length === 0 ? ['demo'] : process.argv.slice(2));

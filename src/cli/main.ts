#!/usr/bin/env node
import { main } from './program.js';

await main(process.argv.slice(2));

import { runVector } from './src/testkit/conformance/vector-runner.js';
import { formatReports } from './src/testkit/conformance/report-format.js';
for (const f of process.argv.slice(2)) console.log(formatReports([await runVector(f)]));

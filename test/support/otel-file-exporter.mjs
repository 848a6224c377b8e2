// Preloaded into a daemon process by test/daemon/otel-daemon.test.ts (NODE_OPTIONS=--import): registers an
// OpenTelemetry SDK whose exporter appends each finished span's name and trace id to $COVEN_TEST_SPANS, as an
// operator's own SDK setup would register theirs.
import { appendFileSync } from 'node:fs';
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';

const file = process.env.COVEN_TEST_SPANS;
const exporter = {
  export(spans, done) {
    for (const span of spans) appendFileSync(file, `${span.name} ${span.spanContext().traceId}\n`);
    done({ code: 0 });
  },
  shutdown: async () => undefined,
};
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));

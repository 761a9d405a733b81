/**
 * The export thread's entry: spans arrive as records from the serving thread
 * (`spanHandoff.ts`), the SDK makes and exports them (`traceExport.ts`). Keeping the SDK's
 * span objects, its batch queue and the exporter's HTTP client out of the serving isolate
 * keeps them out of its heap, its garbage collections and the type feedback of the stream
 * and socket code every request runs (docs/tracing.md, "Cost").
 */
import { parentPort } from 'node:worker_threads';
import type { FromExportThread, ToExportThread } from './spanHandoff.js';
import { createSpanExport } from './traceExport.js';

const port = parentPort;
if (port === null) throw new Error('traceExportWorker.js runs as a worker thread');
const send = (message: FromExportThread): void => port.postMessage(message);

const spans = createSpanExport((message) => send({ type: 'exportFailed', message }));
port.on('message', (message: ToExportThread) => {
  if (message.type === 'spans') {
    try {
      spans.add(message.spans);
    } catch (error) {
      send({ type: 'exportFailed', message: `spans not made: ${(error as Error).message}` });
    }
    send({ type: 'taken', count: message.spans.length });
    return;
  }
  spans.shutdown().then(
    () => send({ type: 'stopped' }),
    () => send({ type: 'stopped' }),
  );
});

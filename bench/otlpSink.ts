/**
 * A local OTLP/HTTP traces endpoint for the tracing bench: answers every export 200 at once and
 * counts requests and bytes (it decodes nothing, so that it costs the machine as little as it can).
 * Sends its port when listening; answers 'report' with its counts.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

let requests = 0;
let bytes = 0;
const server = createServer((req, res) => {
  req.on('data', (d: Buffer) => (bytes += d.length));
  req.on('end', () => {
    requests++;
    res.writeHead(200, { 'Content-Type': 'application/x-protobuf' }).end();
  });
});
server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }));
process.on('message', (m) => {
  if (m === 'report') process.send?.({ requests, bytes });
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));

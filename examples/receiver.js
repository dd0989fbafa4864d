// A webhook subscriber for trying the connector: prints every request body it gets, one per line,
// and answers 200. Usage: node examples/receiver.js [port]   (default 9000)
const { createServer } = require('node:http');
const port = Number(process.argv[2] ?? 9000);
createServer((req, res) => {
  const parts = [];
  req.on('data', (d) => parts.push(d));
  req.on('end', () => {
    process.stdout.write(`${req.method} ${req.url} webhook-id=${req.headers['webhook-id'] ?? '-'} ${Buffer.concat(parts).toString('utf8')}\n`);
    res.end();
  });
}).listen(port, () => process.stderr.write(`receiver listening on port ${port}\n`));

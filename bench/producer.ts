/**
 * Appends to process:updates at a fixed rate for a fixed time, as an inbound connector would
 * (fields casdu, ioa, source, data), in ticks of 10 ms; `data` carries the append time `t` and a
 * sequence number. Reports how many it appended.
 */
import { Redis } from 'ioredis';

const [redisPort, rate, seconds] = process.argv.slice(2).map(Number) as [number, number, number];
const redis = new Redis({ port: redisPort, host: '127.0.0.1', protocol: 2 });

(async () => {
  const start = Date.now();
  const end = start + seconds * 1000;
  let seq = 0;
  while (Date.now() < end) {
    const due = Math.floor(((Date.now() - start) / 1000) * rate);
    if (due > seq) {
      const pipe = redis.pipeline();
      const t = Date.now();
      for (; seq < due; seq++) {
        const ioa = seq % 10000;
        pipe.xadd('process:updates', '*', 'casdu', '1', 'ioa', String(ioa), 'source', 'bench',
          'data', JSON.stringify({ casdu: 1, ioa, type: 36, value: seq, timestamp: new Date(t).toISOString(), source: 'bench', t, seq }));
      }
      await pipe.exec();
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  process.send?.({ produced: seq, seconds: (Date.now() - start) / 1000 });
  redis.disconnect();
})();

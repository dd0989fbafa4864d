/**
 * Appends to process:updates at a fixed rate for a fixed time, as an inbound connector would
 * (fields casdu, ioa, source, data), in ticks of 10 ms; `data` carries the append time `t` and a
 * sequence number (`w: 1` marks the warm-up). Reports how many it appended. With
 * PRODUCER_TRACEPARENT=1 each tick's entries carry a `traceparent` field, as a traced inbound
 * connector's writes do (CONTRACT 9), one trace per tick.
 */
import { Redis } from 'ioredis';

const [redisPort, rate, seconds] = process.argv.slice(2).map(Number) as [number, number, number];
const redis = new Redis({ port: redisPort, host: '127.0.0.1', protocol: 2 });
const traced = process.env.PRODUCER_TRACEPARENT === '1';
const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');

(async () => {
  const start = Date.now();
  const end = start + seconds * 1000;
  let seq = 0;
  // The first second warms the processes up (JIT): delivered and counted, left out of the latencies.
  const warmup = Math.min(rate, Math.floor((rate * seconds) / 5));
  while (Date.now() < end) {
    const due = Math.floor(((Date.now() - start) / 1000) * rate);
    if (due > seq) {
      const pipe = redis.pipeline();
      const t = Date.now();
      // built by hand, not JSON.stringify: the producer must not be what limits the rate
      const head = `{"casdu":1,"type":36,"timestamp":"${new Date(t).toISOString()}","source":"bench","t":${t}`;
      const trace = traced ? ['traceparent', `00-${hex(t, 32)}-${hex(seq + 1, 16)}-01`] : [];
      for (; seq < due; seq++) {
        const ioa = String(seq % 10000);
        pipe.xadd('process:updates', '*', 'casdu', '1', 'ioa', ioa, 'source', 'bench',
          'data', `${head},"ioa":${ioa},"value":${seq},"seq":${seq}${seq < warmup ? ',"w":1' : ''}}`, ...trace);
      }
      await pipe.exec();
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  process.send?.({ produced: seq, seconds: (Date.now() - start) / 1000 });
  redis.disconnect();
})();

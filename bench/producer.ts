/**
 * Appends to process:updates at a fixed rate for a fixed time, as an inbound connector would
 * (fields casdu, ioa, source, data), in ticks of 10 ms; `data` carries the append time `t` and a
 * sequence number (`w: 1` marks the warm-up). Reports how many it appended. With
 * PRODUCER_TRACEPARENT=1 each tick's entries carry a `traceparent` field, as a traced inbound
 * connector's writes do (CONTRACT 9), one trace per tick. With PRODUCER_POINTS=N (push-report) the
 * entries cycle over N points whose values are slow noisy floats (a sine over a minute, ±0.2 of
 * noise) with a rare flip of `quality`, and `t`, `seq` and `w` ride in `timestamp` (`t-seq[-w]`):
 * report by exception compares every other field (CONTRACT 4.8), so a field of their own would make
 * every entry a change.
 */
import { Redis } from 'ioredis';

const [redisPort, rate, seconds] = process.argv.slice(2).map(Number) as [number, number, number];
const redis = new Redis({ port: redisPort, host: '127.0.0.1', protocol: 2 });
const traced = process.env.PRODUCER_TRACEPARENT === '1';
const points = Number(process.env.PRODUCER_POINTS ?? 0);
/** push-report's point: deterministic, from the entry's number and time. */
const slowPoint = (seq: number, t: number, warm: boolean): string => {
  const ioa = seq % points;
  const value = Math.round((50 + 5 * Math.sin((2 * Math.PI * t) / 60000 + ioa) + (((seq * 7919) % 41) - 20) / 100) * 100) / 100;
  const quality = seq % 997 === 0 ? 'bad' : 'good';
  return `{"casdu":1,"ioa":${ioa},"type":36,"source":"bench","value":${value},"quality":"${quality}","timestamp":"${t}-${seq}${warm ? '-w' : ''}"}`;
};
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
        if (points > 0) {
          pipe.xadd('process:updates', '*', 'casdu', '1', 'ioa', String(seq % points), 'source', 'bench', 'data', slowPoint(seq, t, seq < warmup), ...trace);
          continue;
        }
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

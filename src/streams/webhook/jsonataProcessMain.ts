import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { compileJsonata, evaluateBody } from './jsonataEval';
import type { FromJsonataProcess, JsonataProcessInit, ToJsonataProcess } from './jsonataProcess';

/**
 * The process of one JSONata expression (CONTRACT 4.7): it evaluates one batch at a time, as the
 * connector asks, and answers with the body's bytes and the time the evaluation took. It has no
 * limits of its own: the connector ends it at 1 s, V8 at its heap's (`--max-old-space-size`).
 */
// Should the container's memory run out, the kernel ends this process first, never the connector
// (Linux: any process may raise its own score; elsewhere, or where /proc is not there, nothing changes)
try {
  writeFileSync('/proc/self/oom_score_adj', '1000');
} catch {
  // not Linux, or no /proc
}
const send = (m: FromJsonataProcess): void => {
  process.send?.(m);
};
let init: JsonataProcessInit | undefined;
let compiled: ReturnType<typeof compileJsonata> | undefined;

process.on('message', (m: ToJsonataProcess) => {
  if (m.t === 'init') {
    init = m.init;
    compiled = compileJsonata(init.expression, init.output);
    send({ t: 'ready' });
    return;
  }
  const t0 = performance.now();
  void evaluateBody(compiled!, m.input, init!.maxBodyBytes).then((result) => send({ t: 'result', id: m.id, result, micros: (performance.now() - t0) * 1000 }));
});
// the connector gone (its IPC channel closed): nothing is left to do
process.on('disconnect', () => process.exit(0));

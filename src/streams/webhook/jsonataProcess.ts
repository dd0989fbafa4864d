import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { JsonataResult } from './jsonataEval';

/**
 * One JSONata expression's evaluations off the connector's threads (CONTRACT 4.7 "An expression
 * cannot hold the connector"), in a process of the expression's own. A regular expression that
 * backtracks or a long built-in cannot be interrupted on its own thread; a worker thread can be
 * ended, but one that fills its heap inside a built-in (`$pad("", 150000000, "x")` serialised by
 * `JSON.stringify`: no point where V8 could stop it) aborts the whole process — measured here with a
 * worker under `resourceLimits`: "FATAL ERROR: Reached heap limit" in `JsonStringify`, the
 * connector gone. A process of its own is ended whatever it does, and its heap is its own:
 * - it evaluates one batch at a time, in the order they were asked for (each batch's 1 s is its own);
 * - it is ended (SIGKILL) when an evaluation runs 1 s from its own start (`failed`, `evaluation
 *   ended at the 1 s limit`), and dies when its heap is full (`evaluation ended at the memory
 *   limit`); a new one is started for the next batch — the connector and every other webhook go on;
 * - it does not keep the connector's event loop alive while idle, and ends after `idleMs` without
 *   work (a format no longer configured leaves nothing behind), or when the connector exits.
 */
export interface JsonataProcessInit {
  readonly expression: string;
  readonly output: 'json' | 'ndjson';
  readonly maxBodyBytes: number;
}

export type ToJsonataProcess = { readonly t: 'init'; readonly init: JsonataProcessInit } | { readonly t: 'evaluate'; readonly id: number; readonly input: string };
export type FromJsonataProcess =
  | { readonly t: 'ready' }
  | { readonly t: 'result'; readonly id: number; readonly result: JsonataResult; readonly micros: number };

/** What the connector gets of an evaluation: its result, and the evaluating process's time for it (µs; 0 when it was ended). */
export interface Evaluated {
  readonly result: JsonataResult;
  readonly micros: number;
}

export interface JsonataEvaluator {
  /** The evaluation of the default body's text `input`; never rejects. */
  evaluate(input: string): Promise<Evaluated>;
  /** Evaluations asked for and not ended (the one under way included). */
  waiting(): number;
  /** Ends the process now; what waits fails. */
  close(): void;
}

/** The limit of an evaluation's wall time, from its own start (CONTRACT 4.7). */
export const JSONATA_LIMIT_MS = 1000;
export const LIMIT_ERROR = `evaluation ended at the ${JSONATA_LIMIT_MS / 1000} s limit`;
export const MEMORY_ERROR = 'evaluation ended at the memory limit';

/**
 * The process's heap: room for its input parsed, JSONata's intermediate values and a body up to
 * `Webhooks:MaxBodyBytes` as a string and as bytes: 64 MB and 4 times the limit (128 MB for the
 * default 16 MiB).
 */
export const jsonataHeapMb = (maxBodyBytes: number): number => 64 + Math.ceil((4 * maxBodyBytes) / (1024 * 1024));

/** The process's module, beside this one in the build; run from the sources (ts-jest), the build's (`npm test` builds first). */
export const JSONATA_PROCESS_FILE = __filename.endsWith('.ts')
  ? join(__dirname, '..', '..', '..', 'dist', 'src', 'streams', 'webhook', 'jsonataProcessMain.js')
  : join(__dirname, 'jsonataProcessMain.js');

export interface JsonataProcessOptions {
  readonly limitMs?: number;
  readonly heapMb?: number;
  readonly idleMs?: number;
  /** How long a new process may take to start before the evaluation waiting for it fails. */
  readonly startMs?: number;
  readonly file?: string;
}

interface Job {
  readonly input: string;
  readonly done: (e: Evaluated) => void;
}

const failed = (error: string): Evaluated => ({ result: { kind: 'failed', error }, micros: 0 });

/** V8's words when a heap is full: the process died at its memory limit. */
const OUT_OF_MEMORY = /heap out of memory|Reached heap limit|Allocation failed/;

export const jsonataProcess = (init: JsonataProcessInit, o: JsonataProcessOptions = {}): JsonataEvaluator => {
  const limitMs = o.limitMs ?? JSONATA_LIMIT_MS;
  const idleMs = o.idleMs ?? 60000;
  const startMs = o.startMs ?? 10000;
  const heapMb = o.heapMb ?? jsonataHeapMb(init.maxBodyBytes);
  const queue: Job[] = [];
  let child: ChildProcess | undefined;
  let ready = false;
  /** The evaluation under way: its job, id and deadline. */
  let current: { job: Job; id: number; timer: NodeJS.Timeout } | undefined;
  let seq = 0;
  let idle: NodeJS.Timeout | undefined;
  let closed = false;

  /**
   * Ends the process; the evaluation under way (if any) ends with `error` — or, for a process that
   * never became ready, the job that waited for it (else a process that cannot start would be
   * started again for ever).
   */
  const end = (error: string): void => {
    const c0 = child;
    const started = ready;
    child = undefined;
    ready = false;
    if (c0 !== undefined) {
      c0.removeAllListeners();
      c0.stderr?.removeAllListeners();
      c0.on('error', () => undefined);
      c0.kill('SIGKILL');
      if (!started && current === undefined) queue.shift()?.done(failed(error));
    }
    const c = current;
    current = undefined;
    if (c !== undefined) {
      clearTimeout(c.timer);
      c.job.done(failed(error));
    }
  };

  const start = (): ChildProcess => {
    const p = fork(o.file ?? JSONATA_PROCESS_FILE, [], {
      execArgv: [`--max-old-space-size=${heapMb}`, '--max-semi-space-size=8'],
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    let stderr = '';
    p.stderr?.on('data', (chunk: Buffer) => {
      // only V8's last words matter; a few KB at most are kept
      if (stderr.length < 4096) stderr += chunk.toString('utf8');
    });
    // until it is ready, its start counts against the evaluation waiting for it
    const starting = setTimeout(() => {
      end('the evaluation process did not start');
      next();
    }, startMs);
    p.on('message', (m: FromJsonataProcess) => {
      if (m.t === 'ready') {
        clearTimeout(starting);
        ready = true;
        next();
        return;
      }
      const c = current;
      if (c === undefined || c.id !== m.id) return;
      clearTimeout(c.timer);
      current = undefined;
      const r = m.result;
      c.job.done({ result: r.kind === 'body' ? { kind: 'body', bytes: Buffer.from(r.bytes.buffer, r.bytes.byteOffset, r.bytes.byteLength) } : r, micros: m.micros });
      next();
    });
    p.on('error', (err: Error) => {
      clearTimeout(starting);
      end(`the evaluation process failed: ${err.message}`);
      next();
    });
    p.on('exit', (code, signal) => {
      clearTimeout(starting);
      if (child !== p) return;
      // its stderr may still be arriving: V8's message is read once the pipe has closed
      const died = () => {
        if (child !== p) return;
        end(OUT_OF_MEMORY.test(stderr) ? MEMORY_ERROR : `the evaluation process ended (${signal ?? `exit code ${code}`})`);
        next();
      };
      if (p.stderr === null || p.stderr.readableEnded) died();
      else p.stderr.once('close', died);
    });
    p.send({ t: 'init', init } satisfies ToJsonataProcess);
    return p;
  };

  /** Keeps the connector's event loop alive while `busy` (a command waiting for a body), not otherwise. */
  const hold = (p: ChildProcess, busy: boolean): void => {
    const handles = [p, p.channel as { ref(): void; unref(): void } | undefined, p.stderr as unknown as { ref?(): void; unref?(): void } | null];
    for (const h of handles) {
      if (busy) h?.ref?.();
      else h?.unref?.();
    }
  };

  /** The next job, when the process is free: on a ready process, started if there is none. */
  const next = (): void => {
    if (closed || current !== undefined) return;
    const job = queue.shift();
    if (job === undefined) {
      // idle: the connector may exit, and the process goes after a while without work
      if (child !== undefined) hold(child, false);
      clearTimeout(idle);
      idle = setTimeout(() => queue.length === 0 && current === undefined && end('idle'), idleMs);
      idle.unref();
      return;
    }
    clearTimeout(idle);
    if (child === undefined) child = start();
    hold(child, true);
    if (!ready) {
      queue.unshift(job);
      return;
    }
    const id = ++seq;
    const timer = setTimeout(() => {
      end(LIMIT_ERROR);
      next();
    }, limitMs);
    current = { job, id, timer };
    child.send({ t: 'evaluate', id, input: job.input } satisfies ToJsonataProcess);
  };

  return {
    evaluate: (input) =>
      closed
        ? Promise.resolve(failed('the evaluation process is closed'))
        : new Promise<Evaluated>((done) => {
            queue.push({ input, done });
            next();
          }),
    waiting: () => queue.length + (current === undefined ? 0 : 1),
    close: () => {
      closed = true;
      clearTimeout(idle);
      end('the evaluation process is closed');
      for (const job of queue.splice(0)) job.done(failed('the evaluation process is closed'));
    },
  };
};

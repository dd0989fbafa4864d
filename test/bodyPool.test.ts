import { bodyPool } from '../src/runtime/interrogation/bodyPool';

it('gives a released body\'s memory to the next body that fits, never one still in use, and makes a larger one when none fits', () => {
  const pool = bodyPool();
  const a = pool.alloc(100);
  const b = pool.alloc(100);
  expect(a.buffer).not.toBe(b.buffer);
  expect(a.length).toBe(100);
  // room to spare: a body a little larger fits later
  expect(a.buffer.byteLength).toBeGreaterThanOrEqual(120);
  pool.release(a);
  const c = pool.alloc(110);
  expect(c.buffer).toBe(a.buffer);
  expect(c.length).toBe(110);
  // b is still in use: a new body never shares its memory
  const d = pool.alloc(100);
  expect(d.buffer).not.toBe(b.buffer);
  expect(d.buffer).not.toBe(c.buffer);
  pool.release(b);
  // too small for this one: a new buffer, and the one too small is dropped
  const e = pool.alloc(1000);
  expect(e.buffer).not.toBe(b.buffer);
  pool.release(e);
  expect(pool.alloc(1000).buffer).toBe(e.buffer);
});

it('takes back only what it made, and each once', () => {
  const pool = bodyPool();
  const foreign = Buffer.alloc(500);
  pool.release(foreign);
  expect(pool.alloc(10).buffer).not.toBe(foreign.buffer);
  const a = pool.alloc(50);
  pool.release(a);
  pool.release(a);
  const x = pool.alloc(50);
  const y = pool.alloc(50);
  expect(x.buffer).toBe(a.buffer);
  expect(y.buffer).not.toBe(a.buffer);
});

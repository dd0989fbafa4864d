/**
 * Float64 arrays for the addresses of a large read (a full GET, an interrogation), whose memory
 * comes straight from the operating system and goes back to it when the array is collected.
 *
 * Why not `new Float64Array(n)`: its memory comes from the C library's `malloc`. glibc raises its
 * mmap threshold each time a large block is freed (up to 32 MB), so the next GET's arrays come from
 * its heap, and what they leave there stays resident: a GET of 1,000,000 points grew the process
 * by 36–38 MB the first time and 45–53 MB over three (bench/README, "GET of everything: memory").
 * A WebAssembly memory is mapped by V8 itself, page by page, and grows in place (no copy, no
 * outgrown array left behind), so every GET starts from the same memory as the first.
 */

/** What this module uses of WebAssembly (not in the type libraries this project compiles with). */
declare namespace WebAssembly {
  class Memory {
    constructor(descriptor: { initial: number; maximum?: number });
    readonly buffer: ArrayBuffer;
    grow(deltaPages: number): number;
  }
}

/** A WebAssembly page. */
const PAGE_BYTES = 65536;
/** The most a (32-bit) WebAssembly memory may hold: 4 GiB, 536,870,912 addresses. */
const MAX_PAGES = 65536;

const pagesFor = (length: number): number => Math.max(1, Math.ceil((length * 8) / PAGE_BYTES));

/** A zeroed array of `length` doubles, in memory of its own. */
export const mappedFloat64 = (length: number): Float64Array =>
  new Float64Array(new WebAssembly.Memory({ initial: pagesFor(length), maximum: MAX_PAGES }).buffer, 0, length);

/** Doubles appended one at a time; the memory doubles in place as it fills. */
export class MappedList {
  private readonly memory = new WebAssembly.Memory({ initial: 1, maximum: MAX_PAGES });
  private view = new Float64Array(this.memory.buffer);
  private n = 0;

  push(v: number): void {
    if (this.n === this.view.length) {
      this.memory.grow(Math.min(this.memory.buffer.byteLength / PAGE_BYTES, MAX_PAGES - this.memory.buffer.byteLength / PAGE_BYTES));
      this.view = new Float64Array(this.memory.buffer);
    }
    this.view[this.n++] = v;
  }

  get length(): number {
    return this.n;
  }

  /** What was pushed, as a view of the same memory. */
  values(): Float64Array {
    return this.view.subarray(0, this.n);
  }
}

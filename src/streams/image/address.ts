import { CASDU_MAX, IOA_MAX } from '../../mapping/types';
import { PROCESS_IMAGE_PREFIX, processImageKey } from '../../mapping/keys';

/**
 * A point's address as one number, the way the image is read (a full GET, an interrogation):
 * casdu × 2^24 + ioa — exact in a double, ordered by casdu then ioa, 8 bytes a point instead of a
 * key string.
 */
export const IOA_SPAN = IOA_MAX + 1;

export const keyOf = (address: number): string => processImageKey(Math.floor(address / IOA_SPAN), address % IOA_SPAN);

const IOA_INFIX = ':ioa:';

/** Where the last `digitsAt` stopped (module state: nothing is allocated per key). */
let digitsEnd = 0;

/** The decimal number at `i` (no sign, no leading zero), at most `max`; -1 otherwise. */
const digitsAt = (key: string, i: number, max: number): number => {
  let v = 0;
  let k = i;
  while (k < key.length) {
    const c = key.charCodeAt(k);
    if (c < 48 || c > 57) break;
    v = v * 10 + (c - 48);
    if (v > max) return -1;
    k++;
  }
  digitsEnd = k;
  return k === i || (k - i > 1 && key.charCodeAt(i) === 48) ? -1 : v;
};

/**
 * The address of a process image key, or -1 for a key of another shape, which a glob pattern can
 * also match (extra segments, leading zeros, out of range). Read digit by digit, with nothing
 * allocated: a GET of everything reads a million of them.
 */
export const imageAddress = (key: string): number => {
  if (!key.startsWith(PROCESS_IMAGE_PREFIX)) return -1;
  const casdu = digitsAt(key, PROCESS_IMAGE_PREFIX.length, CASDU_MAX);
  if (casdu < 0 || !key.startsWith(IOA_INFIX, digitsEnd)) return -1;
  const ioa = digitsAt(key, digitsEnd + IOA_INFIX.length, IOA_MAX);
  return ioa < 0 || digitsEnd !== key.length ? -1 : casdu * IOA_SPAN + ioa;
};

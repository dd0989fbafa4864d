import type { Scale } from './types';

/**
 * CONTRACT 5.5: a number scaled. `{factor, offset}`: `v × factor + offset`. A range:
 * `s0 + (v − r0) × (s1 − s0) / (r1 − r0)`, limited to the interval between `s0` and `s1` (either
 * order) with `clamp`. The result may be non-finite: the caller refuses it.
 */
export const scaled = (scale: Scale, v: number): number => significant(exact(scale, v));

/**
 * CONTRACT 5.5: a scaled result rounded to 15 significant digits, so that binary noise never
 * reaches a subscriber: `3024 × 0.01` is `30.24`, not `30.240000000000002`. (15 digits: every
 * decimal of at most 15 significant digits survives a round trip through a double.)
 */
const significant = (y: number): number => Number(y.toPrecision(15));

const exact = (scale: Scale, v: number): number => {
  if ('factor' in scale) return v * scale.factor + scale.offset;
  const [r0, r1] = scale.raw;
  const [s0, s1] = scale.scaled;
  // multiplied first: 3 of 0..10 onto 0..100 is 30, not 30.000000000000004; divided first only
  // where the product alone overflows
  const product = (v - r0) * (s1 - s0);
  const y = s0 + (Number.isFinite(product) ? product / (r1 - r0) : ((v - r0) / (r1 - r0)) * (s1 - s0));
  return scale.clamp ? Math.min(Math.max(y, Math.min(s0, s1)), Math.max(s0, s1)) : y;
};

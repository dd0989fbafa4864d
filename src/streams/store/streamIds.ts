/** Stream IDs `ms-seq` compared numerically. */
export const compareIds = (a: string, b: string): number => {
  const [am, as] = a.split('-').map(BigInt) as [bigint, bigint?];
  const [bm, bs] = b.split('-').map(BigInt) as [bigint, bigint?];
  if (am !== bm) return am < bm ? -1 : 1;
  const x = as ?? 0n;
  const y = bs ?? 0n;
  return x === y ? 0 : x < y ? -1 : 1;
};

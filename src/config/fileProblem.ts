/**
 * Why a file named by a setting could not be used, in a few words for a configuration error:
 * the file system's reason, or OpenSSL's own words for PEM that does not load ("no start line",
 * "key values mismatch"). Never the file's contents.
 */
export const fileProblem = (err: unknown): string => {
  const e = err as NodeJS.ErrnoException;
  if (e.code === 'ENOENT') return 'no such file';
  if (e.code === 'EACCES') return 'permission denied';
  if (e.code === 'EISDIR') return 'is a directory';
  return (e.message ?? String(err)).replace(/^error:[0-9A-F]+:[^:]*:[^:]*:/i, '').trim();
};

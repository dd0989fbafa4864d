/**
 * URLs as logs, metric labels, errors and the dead-letter stream may show them (CONTRACT 6.5):
 * never user information nor query, which may carry credentials or tokens.
 */

/** `scheme://host[:port]/path`, without user information, query or fragment; `invalid` when unparsable. */
export const safeUrl = (url: string): string => {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return 'invalid';
  }
};

/** `host[:port]`, for labels and the delivery status. */
export const urlHost = (url: string): string => {
  try {
    return new URL(url).host;
  } catch {
    return 'invalid';
  }
};

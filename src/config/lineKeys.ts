/**
 * Line protocol keys (CONTRACT 4.7): how a tag key, tag value or field key is written, and which
 * field names are never extra fields. One rule for the encoder (`src/streams/webhook/lineProtocol.ts`)
 * and for the configuration's check of `format.fields`, so that the two cannot disagree.
 */

/** Commas, spaces and `=` (tag keys, tag values, field keys). */
const KEY_SPECIAL = /[,= ]/g;
const LINE_BREAKS = /[\r\n]/g;
const TRAILING_BACKSLASHES = /\\+$/;
/** Whether a text needs any of the rewriting below: most do not, and one test is cheaper than three replacements. */
const KEY_NEEDS = /[,= \\\r\n]/;

/** A tag key, tag value or field key: line breaks made spaces, trailing `\` dropped, then `,`, `=` and spaces escaped. */
export const escapeKey = (k: string): string =>
  KEY_NEEDS.test(k) ? k.replace(LINE_BREAKS, ' ').replace(TRAILING_BACKSLASHES, '').replace(KEY_SPECIAL, '\\$&') : k;

/** Fields that are never extra fields, as written (none of them changes when escaped). */
const NOT_EXTRA: ReadonlySet<string> = new Set(['casdu', 'ioa', 'source', 'type', 'value', 'value_text', 'timestamp', 'time']);

/**
 * The key a top-level field of a point is written with as an extra field, or undefined when it can
 * never be one: a reserved name, compared after escaping (so `time\` and `value\`, which lose their
 * trailing `\`, are reserved too), or a name that escapes to nothing.
 */
export const extraFieldKey = (name: string): string | undefined => {
  if (NOT_EXTRA.has(name)) return undefined;
  const k = escapeKey(name);
  return k === '' || (k !== name && NOT_EXTRA.has(k)) ? undefined : k;
};

/**
 * Every Redis key the connectors read or write (CONTRACT 8), named in one place. It lives on the
 * lowest floor that uses a key (the inbound core writes the process image, the stream and the
 * error stream); every other floor takes its key names from here.
 */

/** The process image: one JSON data point per address. */
export const processImageKey = (casdu: number, ioa: number): string => `process:image:casdu:${casdu}:ioa:${ioa}`;
/** What a GET of several points scans for: `*` where an address part is not given. */
export const processImagePattern = (casdu: number | undefined, ioa: number | undefined): string =>
  `process:image:casdu:${casdu ?? '*'}:ioa:${ioa ?? '*'}`;
export const PROCESS_IMAGE_PREFIX = 'process:image:casdu:';

/** Every update to the process image, in order. */
export const UPDATES_STREAM = 'process:updates';

/** The consumer group of an outbound connector on `process:updates`. */
export const groupName = (connectorId: string): string => `rest-outbound:${connectorId}`;

const connector = (connectorId: string, what: string): string => `connectors:${connectorId}:${what}`;

/** Managed settings (CONTRACT 2). */
export const configKey = (connectorId: string): string => connector(connectorId, 'config');
/** The inbound connector's failed mappings. */
export const errorsStream = (connectorId: string): string => connector(connectorId, 'errors');
/** An `Idempotency-Key`'s stored answer (CONTRACT 5.1.1). */
export const idempotencyKey = (connectorId: string, key: string): string => connector(connectorId, `idempotency:${key}`);
/**
 * Caller `caller`'s idempotency keys when `callers` is set (CONTRACT 7.2): the same key from two
 * callers is two keys. The caller's length in code points comes first, so that the caller part
 * can never run into the key part (`cn` with key `a:c` and `cn:a` with key `c` are two keys).
 */
export const callerIdempotencyKey = (connectorId: string, caller: string, key: string): string =>
  connector(connectorId, `idempotency:${[...caller].length}:${caller}:${key}`);
/** CONTRACT 7.2: the requests of `caller` in the one-second window starting at Unix second `second`, across replicas. */
export const rateWindowKey = (connectorId: string, caller: string, second: number): string => connector(connectorId, `rate:${caller}:${second}`);
/** The webhooks' backlogs (CONTRACT 4.4). */
export const deadLetterStream = (connectorId: string): string => connector(connectorId, 'deadletter');
/** Batch boundaries and which webhooks have each batch (CONTRACT 4.3). */
export const batchesKey = (connectorId: string): string => connector(connectorId, 'batches');
/** The replicas' lease on claim rounds. */
export const claimLeaseKey = (connectorId: string): string => connector(connectorId, 'claim-lease');
/** The replicas' lease on redriving webhook `index`'s backlog. */
export const redriveLeaseKey = (connectorId: string, index: number): string => connector(connectorId, `redrive-lease:${index}`);
/** Webhooks that answered 410 Gone (CONTRACT 4.5): webhook key → a digest of the webhook's settings then. */
export const disabledKey = (connectorId: string): string => connector(connectorId, 'disabled');
/** Completed `initialState` interrogations (CONTRACT 4.6): webhook URL (as 4.4 compares it) → its `P`. */
export const interrogatedKey = (connectorId: string): string => connector(connectorId, 'interrogated');
/** The replica performing webhook `index`'s initial interrogation holds this while it runs. */
export const interrogationLockKey = (connectorId: string, index: number): string => connector(connectorId, `interrogation-lock:${index}`);
/** Webhook `index`'s integrity period (CONTRACT 4.6): held by the replica whose periodic interrogation runs or ran last; it expires when the next is due. */
export const periodicKey = (connectorId: string, index: number): string => connector(connectorId, `periodic:${index}`);
/** What webhook `index` was last reported of each point (CONTRACT 4.8; layout: `src/streams/webhook/reportState.ts`). */
export const reportedKey = (connectorId: string, index: number): string => connector(connectorId, `reported:${index}`);
/** Every webhook's report state, for SCAN (a connector Id holding `*`, `?` or `[` is escaped). */
export const reportedPattern = (connectorId: string): string => `${connector(connectorId, 'reported:').replace(/[*?[\]\\]/g, '\\$&')}*`;

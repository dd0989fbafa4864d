import * as E from 'fp-ts/Either';
import { formatOf, prepareBody } from '../streams/webhook/body';
import type { Batch, Cause } from '../streams/read/batches';
import { operatorStartup, readSettingsFile, readText, takeOption, usage, type Io, type Outcome } from './common';

/**
 * `rest-connector webhooks render FILE --webhook N BATCH.json` (CONTRACT 4.7): the body webhook N of
 * the configuration FILE would get for the batch, printed uncompressed, byte for byte. Connects to
 * nothing: the way to develop a format (a JSONata expression above all) before it goes live.
 */

const CAUSES: readonly Cause[] = ['interrogation', 'periodic', 'resend'];

/** `{"datapoints":[…]}` (objects), and `cause` when it names one; or what is wrong with it. */
const batchOf = (text: string, file: string): E.Either<string, Batch> => {
  let u: unknown;
  try {
    u = JSON.parse(text);
  } catch (err) {
    return E.left(`${file} is not JSON: ${(err as Error).message}`);
  }
  const points = (u as { datapoints?: unknown } | null)?.datapoints;
  if (u === null || typeof u !== 'object' || Array.isArray(u) || !Array.isArray(points)) return E.left(`${file} must be an object {"datapoints":[…]}`);
  const bad = points.findIndex((p) => p === null || typeof p !== 'object' || Array.isArray(p));
  if (bad >= 0) return E.left(`${file}: datapoints[${bad}] is not a JSON object`);
  const cause = (u as { cause?: unknown }).cause;
  if (cause !== undefined && !CAUSES.includes(cause as Cause)) return E.left(`${file}: cause must be one of ${CAUSES.join(', ')}`);
  return E.right({
    // no stream entries: a point without a timestamp gets no time in line protocol
    webhookId: 'render', first: 'render', ids: [], size: points.length, recorded: false, done: new Set(),
    content: { kind: 'text', points: points.map((p) => JSON.stringify(p)).join(',') },
    ...(cause !== undefined ? { cause: cause as Cause } : {}),
  });
};

export const renderCommand = async (args: string[], io: Io, help: string, write: (b: Uint8Array) => void): Promise<Outcome> => {
  const webhookRaw = takeOption(args, '--webhook');
  if (webhookRaw === undefined || !/^[0-9]+$/.test(webhookRaw)) return usage(io, webhookRaw === undefined ? '--webhook N is required' : `--webhook takes a webhook index, got '${webhookRaw}'`, help);
  if (args.length !== 2) return usage(io, 'webhooks render takes FILE and BATCH.json', help);
  const [file, batchFile] = args as [string, string];
  const settings = readSettingsFile(file, io);
  if (E.isLeft(settings)) return settings.left;
  const webhook = settings.right.settings.webhooks[Number(webhookRaw)];
  if (webhook === undefined) return usage(io, `${file} has no webhooks[${webhookRaw}] (${settings.right.settings.webhooks.length} webhooks)`, help);
  const text = readText(batchFile);
  if (E.isLeft(text)) return { code: 2, message: text.left };
  const batch = batchOf(text.right, batchFile);
  if (E.isLeft(batch)) return { code: 2, message: batch.left };
  // Webhooks:MaxBodyBytes as the connector would have it (a misspelt parameter stops here too)
  const startup = operatorStartup();
  if (E.isLeft(startup)) return { code: 2, message: startup.left.join('; ') };
  const prepared = await prepareBody(formatOf(webhook, startup.right.webhooks.maxBodyBytes), batch.right);
  if (prepared.kind === 'failed') return { code: 1, message: `cannot be rendered: format: ${prepared.error}` };
  if (prepared.skipped > 0) io.err(`${prepared.skipped} points left out: their format cannot write them (a value missing, null, an object or an array)`);
  if (prepared.kind === 'nothing') {
    io.err('nothing to send (the connector sends no request for such a batch, and counts it delivered)');
    return { code: 0 };
  }
  write(prepared.body.bytes);
  return { code: 0 };
};

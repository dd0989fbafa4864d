import * as E from 'fp-ts/Either';
import { applyToPayload } from '../mapping/apply';
import { byTopic } from '../mapping/commands';
import { DEFAULT_MAX_BATCH_ITEMS, itemCount, payloadOf } from '../mapping/payload';
import { failureBody, okBody } from '../mapping/responses';
import { onlySubcommand, readSettingsFile, readText, takeOption, usage, type Io, type Outcome } from './common';

/** `rest-connector mappings test` (CONTRACT 5): a topic's mappings applied to a payload; nothing is written. */
export const mappingsCommand = async (args: string[], io: Io): Promise<Outcome> => {
  const head = onlySubcommand(args, io, 'mappings', 'test');
  if (!('help' in head)) return head;
  const { help } = head;
  const topic = takeOption(args, '--topic');
  if (topic === undefined || topic === '') return usage(io, '--topic T is required', help);
  if (args.length !== 2) return usage(io, 'mappings test takes FILE and PAYLOAD.json', help);
  const [settingsFile, payloadFile] = args as [string, string];
  const decoded = readSettingsFile(settingsFile, io);
  if (E.isLeft(decoded)) return decoded.left;
  const payloadText = readText(payloadFile);
  if (E.isLeft(payloadText)) return { code: 2, message: payloadText.left };
  let payload: unknown;
  try {
    payload = JSON.parse(payloadText.right);
  } catch (err) {
    return { code: 2, message: `${payloadFile}: not valid JSON: ${(err as Error).message}` };
  }
  // what the connector takes (CONTRACT 5.5): an object, or an array of 1 to Http:MaxBatchItems (its default) objects
  const body = payloadOf(payload, DEFAULT_MAX_BATCH_ITEMS);
  if (E.isLeft(body)) return { code: 2, message: `${payloadFile}: ${body.left.replace(/^the body/, 'the payload')}` };
  const mappings = byTopic(decoded.right.settings.mappings).get(topic);
  if (mappings === undefined) return { code: 2, message: `No mappings are configured for topic '${topic}'` };
  const source = process.env.Id ?? process.env.ID ?? 'mappings-test';
  const items = itemCount(body.right);
  const result = applyToPayload(mappings, body.right, new Date().toISOString(), source);
  if (E.isLeft(result)) {
    io.out(JSON.stringify(failureBody(topic, result.left, items), null, 2));
    return { code: 1 };
  }
  // the data points in the order they would be appended
  io.out(JSON.stringify({ ...okBody(topic, result.right, items), datapoints: result.right.map((p) => p.point) }, null, 2));
  return { code: 0 };
};

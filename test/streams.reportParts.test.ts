import type { Webhook } from '../src/config/webhookSettings';
import type { Batch } from '../src/streams/read/batches';
import type { DecodedEntry } from '../src/streams/read/entries';
import { formBatch, withReport } from '../src/streams/push/pipeline';
import { makeSubscriptions } from '../src/streams/webhook/subscription';

/**
 * Which part of a batch each webhook gets once webhooks with `report` (CONTRACT 4.8) are among them:
 * fresh (from the decision) and re-formed (from the record), beside filtered (4.5) and plain ones.
 */
const DEFAULTS = { maxAttempts: 1, maxInFlight: 1, queueCap: 10, circuitThreshold: 3, probeIntervalMs: 1000, autoRedrive: false, timeoutMs: 1000 };
const hook = (url: string, extra: Partial<Webhook> = {}): Webhook => ({ url, headers: {}, secrets: [], ...extra });
const subs = makeSubscriptions([
  hook('http://plain/'),
  hook('http://filtered/', { filter: { casdu: [[2, 2]] } }),
  hook('http://report/', { report: { deadband: [{ absolute: 1 }] } }),
  hook('http://both/', { filter: { casdu: [[1, 1]] }, report: { maxSilenceSeconds: 60 } }),
], DEFAULTS);
const reporting = subs.filter((s) => s.webhook.report !== undefined);
const e = (id: string, casdu: number): DecodedEntry => ({ id, json: `{"casdu":${casdu},"ioa":1,"value":1,"id":"${id}"}`, casdu, ioa: 1, type: undefined });
const entries = [e('1-0', 1), e('1-1', 2), e('1-2', 1), e('1-3', 2), e('1-4', 1)];
const partIds = (b: Batch) => Object.fromEntries(subs.map((s) => {
  const p = b.parts?.has(s.key) === true ? b.parts.get(s.key)! : b;
  return [s.webhook.url, p === null ? null : `${p.webhookId} ${p.ids.join(',')}`];
}));

it('a re-formed batch: each reporting webhook gets what its record says, a filtered one its filter\'s part, a plain one all', () => {
  const record = {
    first: '1-0', last: '1-4', done: new Set([subs[3]!.key]),
    parts: new Map([[subs[1]!.key, '1-1_1-3'], [subs[2]!.key, '1-0_1-4 +1-0,1-4']]),
  };
  expect(partIds(formBatch(subs)(entries, record))).toEqual({
    'http://plain/': '1-0_1-4 1-0,1-1,1-2,1-3,1-4',
    'http://filtered/': '1-1_1-3 1-1,1-3',
    'http://report/': '1-0_1-4 1-0,1-4',
    // marked done with the record (nothing reportable): whatever its part, the lane skips it
    'http://both/': '1-0_1-4 1-0,1-2,1-4',
  });
});

it('a fresh batch: the decision\'s parts (with their entries, or read back as records) and null for nothing', () => {
  const b = formBatch(subs)(entries);
  // before the decision, no reporting webhook has a part yet
  expect([...(b.parts?.keys() ?? [])]).toEqual([subs[1]!.key]);
  const decided = new Map<string, { value: string; entries?: DecodedEntry[] } | null>([
    [subs[2]!.key, { value: '1-1_1-2 -1-0,1-3,1-4', entries: [entries[1]!, entries[2]!] }],
    [subs[3]!.key, null],
  ]);
  expect(partIds(withReport(reporting, b, entries, (k) => decided.get(k)))).toEqual({
    'http://plain/': '1-0_1-4 1-0,1-1,1-2,1-3,1-4',
    'http://filtered/': '1-1_1-3 1-1,1-3',
    'http://report/': '1-1_1-2 1-1,1-2',
    'http://both/': null,
  });
  // the same decision read back from its record text
  decided.set(subs[2]!.key, { value: '1-1_1-2 -1-0,1-3,1-4' });
  expect(partIds(withReport(reporting, b, entries, (k) => decided.get(k)))['http://report/']).toBe('1-1_1-2 1-1,1-2');
});

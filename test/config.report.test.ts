import * as E from 'fp-ts/Either';
import { decodeManagedSettings, settingsFingerprint } from '../src/config/managed';
import { webhookShown } from '../src/config/webhookSettings';
import { outboundOpenApi } from '../src/http/openapi/outbound';

/** CONTRACT 4.8: `report` as the configuration says it — checked field by field, shown as configured. */
const decode = (report: unknown) => decodeManagedSettings({ webhooks: [{ url: 'http://a/' }, { url: 'http://b/', report }] });
const problems = (report: unknown) => {
  const d = decode(report);
  return E.isLeft(d) ? d.left : [];
};

it.each([
  [{}, 'webhooks[1].report: give a non-empty deadband or maxSilenceSeconds, or both'],
  [{ deadband: [] }, 'webhooks[1].report.deadband: must be a non-empty list of rules, got []'],
  [{ deadband: [{ absolute: 1, percent: 2 }] }, 'webhooks[1].report.deadband[0]: give absolute or percent, not both'],
  [{ deadband: [{ absolute: 1 }, { filter: { ioa: [1] } }] }, 'webhooks[1].report.deadband[1]: give absolute or percent'],
  [{ deadband: [{ absolute: -1 }] }, 'webhooks[1].report.deadband[0].absolute: must be a finite number ≥ 0, got -1'],
  [{ deadband: [{ percent: '2' }] }, 'webhooks[1].report.deadband[0].percent: must be a finite number ≥ 0, got "2"'],
  [{ deadband: [{ absolute: 1, band: 2 }] }, 'webhooks[1].report.deadband[0]: unknown field "band" (a rule has filter, and absolute or percent)'],
  [{ deadband: [{ absolute: 1, filter: { ioa: ['9-3'] } }] }, 'webhooks[1].report.deadband[0].filter.ioa[0]: range "9-3" is empty'],
  [{ deadband: [7] }, 'webhooks[1].report.deadband[0]: must be an object {"filter"?, "absolute" or "percent"}, got 7'],
  [{ maxSilenceSeconds: 0 }, 'webhooks[1].report.maxSilenceSeconds: must be an integer in 1 to 86400, got 0'],
  [{ maxSilenceSeconds: 86401 }, 'webhooks[1].report.maxSilenceSeconds: must be an integer in 1 to 86400, got 86401'],
  [{ maxSilenceSeconds: 1.5 }, 'webhooks[1].report.maxSilenceSeconds: must be an integer in 1 to 86400, got 1.5'],
  [{ maxSilence: 60 }, 'webhooks[1].report: unknown field "maxSilence" (report has deadband and maxSilenceSeconds)'],
  [[], 'webhooks[1].report: must be an object {"deadband"?, "maxSilenceSeconds"?}, got []'],
])('report %j is a config error naming the field', (report, message) => {
  expect(problems(report)).toEqual([message]);
});

it('a valid report is shown as configured (rules\' filters as written), null without one; its fingerprint changes with it', () => {
  const report = { deadband: [{ filter: { casdu: [10, '20-29'], types: [36] }, absolute: 0.5 }, { percent: 0 }], maxSilenceSeconds: 900 };
  const d = decode(report);
  if (E.isLeft(d)) throw new Error(d.left.join('; '));
  expect(d.right.webhooks.map((w) => webhookShown(w).report)).toEqual([null, report]);
  expect(problems({ maxSilenceSeconds: 1 })).toEqual([]);
  const fp = (r: unknown) => settingsFingerprint(E.getOrElseW(() => { throw new Error('invalid'); })(decode(r)), 'outbound');
  expect(fp(report)).not.toBe(fp({ ...report, maxSilenceSeconds: 901 }));
  expect(fp(report)).toBe(fp({ maxSilenceSeconds: 900, deadband: report.deadband }));
});

it('the OpenAPI document describes report in the webhook status', () => {
  const text = JSON.stringify(outboundOpenApi);
  expect(text).toContain('"report":{"type":["object","null"]');
});

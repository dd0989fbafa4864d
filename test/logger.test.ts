import { Writable } from 'node:stream';
import { makeLogger } from '../src/runtime/logger';

const capture = () => {
  const lines: string[] = [];
  const sink = new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString()), cb()) });
  return { log: makeLogger({}, sink), text: () => lines.join('') };
};

it('redacts header values, secrets, passwords and API keys in the shapes we log', () => {
  const { log, text } = capture();
  const webhook = { url: 'https://h/x', headers: { Authorization: 'Bearer S1', 'X-Key': 'S2' }, secret: 'S3' };
  log.info({ webhooks: [webhook, webhook] }, 'a');
  log.info({ webhook }, 'b');
  log.info({ headers: { authorization: 'S4' }, secret: 'S5', password: 'S6', apiKeys: ['S7'], apiKey: 'S8', authorization: 'S9' }, 'c');
  const out = text();
  for (let i = 1; i <= 9; i++) expect(out).not.toContain(`S${i}`);
  expect(out).toContain('"url":"https://h/x"');
  expect(out.match(/\[redacted\]/g)!.length).toBe(6 + 3 + 6);
});

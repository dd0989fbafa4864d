import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { oauth2Tokens, RENEW_BEFORE_MS } from '../src/streams/webhook/oauth2';

/** CONTRACT 4.5's token rules, against a token endpoint in this process and a clock of the test's own. */
let server: Server;
let url = '';
let issued = 0;
let expiresIn: number | undefined;
beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      issued++;
      // answered a little later, so that concurrent asks overlap
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: `t${issued}`, ...(expiresIn !== undefined ? { expires_in: expiresIn } : {}) })), 30);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`;
});
afterAll(() => new Promise((r) => server.close(r)));
beforeEach(() => {
  issued = 0;
  expiresIn = undefined;
});

const source = (now: () => number) => oauth2Tokens({ tokenUrl: url, clientId: 'c', clientSecret: 's' }, 's', undefined, 2000, now);

it('one token request at a time, however many ask; kept without expires_in until discarded', async () => {
  const t = source(() => 0);
  expect(await Promise.all([t.get(), t.get(), t.get()])).toEqual(['t1', 't1', 't1']);
  expect([await t.get(), issued]).toEqual(['t1', 1]);
  t.discard('t1');
  expect([await t.get(), issued]).toEqual(['t2', 2]);
  t.close();
});

it('discarding a token a 401 came back for keeps a newer one already fetched', async () => {
  const t = source(() => 0);
  const old = await t.get();
  t.discard(old);
  const newer = await t.get();
  t.discard(old); // a second request that carried the old token answered 401 later
  expect([await t.get(), newer, issued]).toEqual(['t2', 't2', 2]);
  t.close();
});

it(`renewed ${RENEW_BEFORE_MS / 1000} s before its expires_in, not earlier`, async () => {
  let clock = 0;
  expiresIn = 60;
  const t = source(() => clock);
  expect(await t.get()).toBe('t1');
  clock = 60_000 - RENEW_BEFORE_MS - 1;
  expect(await t.get()).toBe('t1');
  clock = 60_000 - RENEW_BEFORE_MS;
  expect([await t.get(), issued]).toEqual(['t2', 2]);
  t.close();
});

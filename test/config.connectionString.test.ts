import * as E from 'fp-ts/Either';
import { parseConnectionString, toRedisOptions } from '../src/config/connectionString';

const ok = (s: string) => {
  const r = parseConnectionString(s);
  if (E.isLeft(r)) throw new Error(r.left);
  return r.right;
};
const err = (s: string): string => {
  const r = parseConnectionString(s);
  if (E.isRight(r)) throw new Error(`expected an error for ${s}`);
  return r.left;
};

describe('ConnectionStrings:Datastore', () => {
  it('host:port and the default port', () => {
    expect(toRedisOptions(ok('redis.local:6380'))).toEqual({ protocol: 2, db: 0, host: 'redis.local', port: 6380 });
    expect(toRedisOptions(ok('localhost'))).toMatchObject({ host: 'localhost', port: 6379 });
    expect(toRedisOptions(ok('[::1]:7000'))).toMatchObject({ host: '::1', port: 7000 });
  });

  it('StackExchange.Redis options, case-insensitive, abortConnect ignored', () => {
    const o = toRedisOptions(ok('r1:6379,Password=s3cret,USER=app,ssl=True,defaultDatabase=3,connectTimeout=1500,abortConnect=false'));
    expect(o).toEqual({ protocol: 2, host: 'r1', port: 6379, password: 's3cret', username: 'app', tls: {}, db: 3, connectTimeout: 1500 });
  });

  it('serviceName means Sentinel with the listed endpoints as sentinels', () => {
    const o = toRedisOptions(ok('s1:26379,s2:26380,serviceName=mymaster,password=p'));
    // failoverDetector: the sentinels' +switch-master is followed, not only the next connection error
    expect(o).toEqual({ protocol: 2, db: 0, password: 'p', sentinels: [{ host: 's1', port: 26379 }, { host: 's2', port: 26380 }], name: 'mymaster', failoverDetector: true });
  });

  it('TLS: CA, client certificate and key from the startup parameters, sslHost as the name to verify, the same TLS for sentinels; sentinelPassword apart', () => {
    const files = { ca: 'CA-PEM', cert: 'CERT-PEM', key: 'KEY-PEM' };
    expect(toRedisOptions(ok('redis.internal:6380,ssl=true,sslHost=redis.example.com,password=p'), files)).toEqual({
      protocol: 2, db: 0, password: 'p', host: 'redis.internal', port: 6380, tls: { ca: 'CA-PEM', cert: 'CERT-PEM', key: 'KEY-PEM', servername: 'redis.example.com' },
    });
    const tls = { ca: 'CA-PEM', servername: 'r.example.com' };
    expect(toRedisOptions(ok('s1:26379,serviceName=m,ssl=true,sslHost=r.example.com,password=p,sentinelPassword=sp'), { ca: 'CA-PEM' })).toEqual({
      protocol: 2, db: 0, password: 'p', tls, sentinels: [{ host: 's1', port: 26379 }], name: 'm', failoverDetector: true,
      sentinelPassword: 'sp', enableTLSForSentinelMode: true, sentinelTLS: tls,
    });
    // files are not used without ssl=true (the start-up refuses that combination)
    expect(toRedisOptions(ok('h:1'), files).tls).toBeUndefined();
    expect(E.isLeft(parseConnectionString('h:1,sslHost='))).toBe(true);
  });

  it('redis:// and rediss:// URLs', () => {
    expect(toRedisOptions(ok('redis://u:p%40ss@h:6390/2'))).toEqual({ protocol: 2, host: 'h', port: 6390, username: 'u', password: 'p@ss', db: 2 });
    expect(toRedisOptions(ok('rediss://h'))).toEqual({ protocol: 2, host: 'h', port: 6379, db: 0, tls: {} });
    expect(toRedisOptions(ok('redis://[::1]:6400'))).toMatchObject({ host: '::1', port: 6400 });
  });

  it.each([
    ['host:notaport', /invalid port 'notaport'/],
    ['host:70000', /invalid port '70000'/],
    ['a:1:2', /invalid endpoint/],
    ['password=x', /no host:port/],
    ['h:1,ssl=maybe', /ssl: expected true or false, got 'maybe'/],
    ['h:1,defaultDatabase=x', /defaultDatabase/],
    ['h:1,serviceName=', /serviceName/],
    ['h:1,connectTimeout=soon', /connectTimeout/],
    ['h:1,syncTimeout=5', /unsupported option 'syncTimeout'/],
    ['http://h:1', /unsupported scheme/],
    ['redis://h/abc', /invalid database 'abc'/],
  ])('rejects %p', (input, pattern) => {
    expect(err(input)).toMatch(pattern);
  });

  it('never echoes a password in an error', () => {
    expect(err('password=topsecret')).not.toContain('topsecret');
    expect(err('redis://u:topsecret@h:99999')).not.toContain('topsecret');
  });
});

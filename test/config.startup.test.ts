import * as E from 'fp-ts/Either';
import { collectRaw, loadStartupSettings } from '../src/config/startup';

const load = (appsettings: unknown, env: Record<string, string>, requireId = true) =>
  loadStartupSettings(collectRaw(appsettings, env), { requireId, hostname: 'host-a' });

describe('startup parameters', () => {
  it('applies every default of the specification and the contract', () => {
    const s = load({}, { Id: 'c1' });
    expect(s).toEqual(
      E.right({
        id: 'c1',
        connectionString: 'localhost:6379',
        datastore: {
          connectionRetrySeconds: 2, streamPollIntervalMilliseconds: 500, startFromLatest: true,
          configPollIntervalMilliseconds: 1000, streamMaxLength: 100000, consumerName: 'host-a',
          claimIdleMilliseconds: 60000, claimIntervalMilliseconds: 30000, commandTimeoutMilliseconds: 5000, waitReplicas: 0, waitTimeoutMilliseconds: 1000,
          requireNoEviction: false, memoryCheckIntervalMilliseconds: 60000,
        },
        webhooks: {
          batchWindowMilliseconds: 100, batchMaxSize: 1000, timeoutMilliseconds: 10000, maxAttempts: 5, maxInFlight: 4,
          stopTimeoutMilliseconds: 8000, circuitFailureThreshold: 3, probeIntervalSeconds: 5, autoRedrive: true, deadLetterMaxLength: 100000, allowedNetworks: [],
          maxBodyBytes: 16777216,
        },
        http: { maxBodyBytes: 1048576, maxBatchItems: 1000, maxConnections: 1024, headersTimeoutMilliseconds: 10000, requestTimeoutMilliseconds: 30000, maxBodyBytesInFlight: 67108864, idempotencyTtlSeconds: 86400, operatorPage: true },
        apiKeys: [],
        clientCertificates: 'off',
      }),
    );
  });

  it('reads nested appsettings.json, lets environment variables (with __) override, case-insensitively', () => {
    const s = load(
      { ConnectionStrings: { Datastore: 'file:1' }, Datastore: { StreamPollIntervalMilliseconds: 250, StartFromLatest: false }, id: 'from-file' },
      { CONNECTIONSTRINGS__DATASTORE: 'env:2', datastore__startfromlatest: 'TRUE', Webhooks__MaxInFlight: '8', Authentication__ApiKeys: ' k1, k2 ,,' },
    );
    if (E.isLeft(s)) throw new Error(s.left.join());
    expect(s.right.id).toBe('from-file');
    expect(s.right.connectionString).toBe('env:2');
    expect(s.right.datastore.streamPollIntervalMilliseconds).toBe(250);
    expect(s.right.datastore.startFromLatest).toBe(true);
    expect(s.right.webhooks.maxInFlight).toBe(8);
    expect(s.right.apiKeys).toEqual([{ name: 'key-1', key: 'k1' }, { name: 'key-2', key: 'k2' }]);
  });

  it('CONTRACT 1: a misspelt name under a section of the contract is an error naming it as written and the nearest parameter; other names are not looked at', () => {
    // misspelt on purpose (the names issue 46's InfluxDB test used): what they cause is this refusal
    expect(load({}, { Id: 'c1', Webhooks__CircuitBreakerThreshold: '1', Webhooks__ProbeIntervalMilliseconds: '200' })).toEqual(E.left([
      'Webhooks__CircuitBreakerThreshold is not a startup parameter: did you mean Webhooks:CircuitFailureThreshold?',
      'Webhooks__ProbeIntervalMilliseconds is not a startup parameter: did you mean Webhooks:ProbeIntervalSeconds?',
    ]));
    expect(load({ Datastore: { StreamPolIntervalMilliseconds: 5 }, ConnectionStrings: { Redis: 'x' } }, { Id: 'c1', HTTP__maxbodybyte: '5', authentication__apikey: 'k' })).toEqual(E.left([
      'Datastore:StreamPolIntervalMilliseconds (appsettings.json) is not a startup parameter: did you mean Datastore:StreamPollIntervalMilliseconds?',
      'ConnectionStrings:Redis (appsettings.json) is not a startup parameter: did you mean ConnectionStrings:Datastore?',
      'HTTP__maxbodybyte is not a startup parameter: did you mean Http:MaxBodyBytes?',
      'authentication__apikey is not a startup parameter: did you mean Authentication:ApiKeys?',
    ]));
    // the other connector's parameters are accepted (one environment serves both); names outside the sections are not looked at
    const s = load({ Logging: { Level: 'x' } }, { Id: 'c1', Http__MaxBatchItems: '5', Webhooks__MaxBodyBytes: '1024', PATH: '/bin', OTEL_SERVICE_NAME: 'x', NODE_OPTIONS: '', Http_Proxy: 'x', Webhooks: 'x' });
    expect(E.isRight(s) && [s.right.http.maxBatchItems, s.right.webhooks.maxBodyBytes]).toEqual([5, 1024]);
  });

  it('reads named API keys (name=key), keeps base64 padding in an unnamed key, refuses a name given twice (CONTRACT 7.1)', () => {
    const s = load({}, { Id: 'c1', Authentication__ApiKeys: 'plant-a=s3cret,bXlrZXk=,scada.2=a=b,c2VjcmV0a2V5MTI=' });
    expect(E.isRight(s) && s.right.apiKeys).toEqual([
      { name: 'plant-a', key: 's3cret' }, { name: 'key-2', key: 'bXlrZXk=' }, { name: 'scada.2', key: 'a=b' }, { name: 'key-4', key: 'c2VjcmV0a2V5MTI=' },
    ]);
    expect(load({}, { Id: 'c1', Authentication__ApiKeys: 'a=1,a=2' })).toEqual(E.left(["Authentication:ApiKeys: the name 'a' is given to two keys"]));
  });

  it('reads the https listener parameters; client certificates default to optional with a client CA, and need one (CONTRACT 7.1)', () => {
    const s = load({}, { Id: 'c1', Http__TlsCertFile: '/c.pem', Http__TlsKeyFile: '/k.pem', Http__ClientCaFile: '/ca.pem' });
    expect(E.isRight(s) && [s.right.http.tlsCertFile, s.right.http.tlsKeyFile, s.right.http.clientCaFile, s.right.clientCertificates]).toEqual(['/c.pem', '/k.pem', '/ca.pem', 'optional']);
    expect(E.isRight(load({}, { Id: 'c1', Http__ClientCaFile: '/ca.pem', Authentication__ClientCertificates: 'Required' }))).toBe(true);
    expect(load({}, { Id: 'c1', Authentication__ClientCertificates: 'required' })).toEqual(
      E.left(['Authentication:ClientCertificates: required needs Http:ClientCaFile (the CA that signs client certificates)']),
    );
    expect(load({}, { Id: 'c1', Authentication__ClientCertificates: 'maybe' })).toEqual(E.left(["Authentication:ClientCertificates: expected off, optional or required, got 'maybe'"]));
  });

  it('refuses a stop timeout beyond the 10 s of the whole stop, and reads the outage parameters', () => {
    expect(load({}, { Id: 'c1', Webhooks__StopTimeoutMilliseconds: '10001' })).toEqual(E.left(["Webhooks:StopTimeoutMilliseconds: must be at most 10000 (the whole stop takes at most 10 s), got '10001'"]));
    const s = load({}, { Id: 'c1', Webhooks__AutoRedrive: 'FALSE', Webhooks__ProbeIntervalSeconds: '0.5', Webhooks__CircuitFailureThreshold: '7', Webhooks__DeadLetterMaxLength: '10' });
    if (E.isLeft(s)) throw new Error(s.left.join());
    expect([s.right.webhooks.autoRedrive, s.right.webhooks.probeIntervalSeconds, s.right.webhooks.circuitFailureThreshold, s.right.webhooks.deadLetterMaxLength]).toEqual([false, 0.5, 7, 10]);
    expect(E.isLeft(load({}, { Id: 'c1', Webhooks__AutoRedrive: 'maybe' }))).toBe(true);
  });

  it('returns a frozen settings object', () => {
    const s = load({}, { Id: 'c1' });
    if (E.isLeft(s)) throw new Error('unexpected');
    expect(Object.isFrozen(s.right)).toBe(true);
    expect(Object.isFrozen(s.right.datastore)).toBe(true);
  });

  it.each([
    ['missing', {}],
    ['empty', { Id: '' }],
    ['blank', { Id: '   ' }],
  ])('names Id when it is %s', (_what, env) => {
    expect(load({}, env as Record<string, string>)).toEqual(E.left([expect.stringContaining('Id')]));
  });

  it('does not require Id for the operator commands', () => {
    expect(E.isRight(load({}, {}, false))).toBe(true);
  });

  it.each([
    ['Datastore__StreamPollIntervalMilliseconds', 'abc', 'Datastore:StreamPollIntervalMilliseconds'],
    ['Datastore__StreamPollIntervalMilliseconds', '0', 'Datastore:StreamPollIntervalMilliseconds'],
    ['Datastore__ConnectionRetrySeconds', '-1', 'Datastore:ConnectionRetrySeconds'],
    ['Datastore__StartFromLatest', 'yes', 'Datastore:StartFromLatest'],
    ['Webhooks__BatchMaxSize', '1.5', 'Webhooks:BatchMaxSize'],
    ['Http__MaxBodyBytes', '', 'Http:MaxBodyBytes'],
    ['ConnectionStrings__Datastore', ' ', 'ConnectionStrings:Datastore'],
  ])('rejects %s=%p naming the parameter and the value', (name, value, canonical) => {
    const s = load({}, { Id: 'c1', [name]: value });
    expect(E.isLeft(s)).toBe(true);
    if (E.isLeft(s)) {
      expect(s.left).toHaveLength(1);
      expect(s.left[0]).toContain(canonical);
      if (value.trim() !== '') expect(s.left[0]).toContain(value);
    }
  });

  it('reports every bad parameter at once', () => {
    const s = load({}, { Datastore__StreamPollIntervalMilliseconds: 'x', Webhooks__MaxAttempts: '0' });
    expect(E.isLeft(s) && s.left.length).toBe(3);
  });

  it('refuses a consumer name with ~ (it names the consumers that hold claimed entries)', () => {
    expect(load({}, { Id: 'c', Datastore__ConsumerName: 'a~b' })).toEqual(
      E.left(["Datastore:ConsumerName: must not contain '~' (it names the consumers that hold claimed entries), got 'a~b'"]),
    );
  });

  it('accepts fractional retry seconds', () => {
    const s = load({}, { Id: 'c', Datastore__ConnectionRetrySeconds: '0.25' });
    expect(E.isRight(s) && s.right.datastore.connectionRetrySeconds).toBe(0.25);
  });
});

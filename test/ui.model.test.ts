import {
  accessOf, BACKLOG_COLUMNS, backlogRows, cell, DATAPOINT_COLUMNS, datapointQuery, MAPPING_COLUMNS, datapointRows, mappingRows, outcomeText, refusalText, WEBHOOK_COLUMNS, webhookActions, webhookRows,
} from '../src/ui/model';

/** The invariants written at the top of src/ui/model.ts (the operator page's own logic, CONTRACT 6.8). */
describe('the operator page\'s model', () => {
  it('access: 2xx signed in, 401 asks for a key, 403 refused (its detail shown), anything else failed', () => {
    expect([200, 202, 299, 401, 403, 404, 199, 300, 500, 503].map(accessOf)).toEqual(['ok', 'ok', 'ok', 'sign-in', 'refused', 'failed', 'failed', 'failed', 'failed', 'failed']);
  });

  it('invariant 1: every cell is text — empty for nothing, numbers and booleans as written, anything else its JSON', () => {
    expect([cell(undefined), cell(null), cell(''), cell('<b>x</b>'), cell(0), cell(2.5), cell(false), cell({ a: [1] }), cell([1, '2'])])
      .toEqual(['', '', '', '<b>x</b>', '0', '2.5', 'false', '{"a":[1]}', '[1,"2"]']);
  });

  it('invariant 2: a webhook row holds the columns of the table only — never a URL, header or secret, whatever the status holds', () => {
    const status = {
      webhooks: [
        { index: 0, host: 'historian:8443', format: 'influx-line', state: 'open', inFlight: 2, queued: 5, backlog: 7, lastSuccessAt: '2026-11-28T10:00:00.000Z', lastError: 'HTTP 503', url: 'https://u:p@historian/x?token=t', headers: { Authorization: 'secret' }, secrets: ['whsec_x'] },
        { index: 1, host: 'cloud', state: 'healthy', inFlight: 0, queued: 0, backlog: 0, lastSuccessAt: null, lastError: null },
      ],
    };
    const rows = webhookRows(status);
    expect(rows).toEqual([
      { index: 0, state: 'open', cells: ['0', 'historian:8443', 'influx-line', 'open', '2', '5', '7', '2026-11-28T10:00:00.000Z', 'HTTP 503'] },
      { index: 1, state: 'healthy', cells: ['1', 'cloud', 'datapoints', 'healthy', '0', '0', '0', '', ''] },
    ]);
    expect(WEBHOOK_COLUMNS.map(([, k]) => k)).toEqual(['index', 'host', 'format', 'state', 'inFlight', 'queued', 'backlog', 'lastSuccessAt', 'lastError']);
    expect(JSON.stringify(rows)).not.toMatch(/token|secret|whsec|u:p/);
  });

  it('a webhook without an integer index is left out (no button could name it); an answer of another shape has no rows', () => {
    expect(webhookRows({ webhooks: [{ index: '0' }, { index: -1 }, { index: 1.5 }, {}, null, { index: 3, state: 'x' }] }).map((r) => r.index)).toEqual([3]);
    for (const odd of [null, undefined, 'x', 1, [], { webhooks: 'x' }, { webhooks: null }]) expect(webhookRows(odd)).toEqual([]);
  });

  it('invariant 3: the webhooks\' actions are offered only when GET /api/webhooks let the caller through', () => {
    expect(webhookActions('ok')).toEqual(['Interrogate', 'Backlog', 'Replay', 'Purge']);
    for (const a of ['refused', 'sign-in', 'failed'] as const) expect(webhookActions(a)).toEqual([]);
  });

  it('backlog rows: the fields of 6.8 in order, and the next page\'s after (null after the last)', () => {
    const page = { entries: [{ id: '1-0', at: '2026-11-28T10:00:00.000Z', reason: 'circuit', webhookId: '5-0_6-0', attempts: 0, error: 'circuit open', contentType: 'text/plain', bodyPreview: 'm v=1 5', bodyBytes: 7 }], next: '1-0' };
    expect(backlogRows(page)).toEqual({ rows: [['2026-11-28T10:00:00.000Z', 'circuit', '5-0_6-0', '0', 'circuit open', 'text/plain', 'm v=1 5']], next: '1-0' });
    expect(backlogRows({ entries: [], next: null })).toEqual({ rows: [], next: null });
    expect(backlogRows({ entries: 'x', next: 5 })).toEqual({ rows: [], next: null });
  });

  it('outcomes as 6.8 words them: "delivered N, failed M", "purged N"', () => {
    expect(outcomeText('Replay', { delivered: 3, failed: 1 })).toBe('delivered 3, failed 1');
    expect(outcomeText('Purge', { purged: 4 })).toBe('purged 4');
    expect(outcomeText('Purge', {})).toBe('purged ');
  });

  it('data points and mappings as rows, in their columns', () => {
    expect(datapointRows({ datapoints: [{ source: 's', casdu: 1, ioa: 2, type: 36, value: 1.5, timestamp: 't', extra: 'x' }] })).toEqual([['1', '2', '36', '1.5', 't', 's']]);
    expect(datapointRows({})).toEqual([]);
    expect(mappingRows({ mappings: [{ topic: 'a', name: 'n', casdu: 1, ioa: 2, type: 1, valuePath: 'v', timestampPath: 'ts', valueType: 'bool' }, { topic: 'b', name: 'm', casdu: 3, ioa: 4, type: 36, valuePath: 'w' }] }))
      .toEqual([['a', 'n', '1', '2', '1', 'v', 'ts'], ['b', 'm', '3', '4', '36', 'w', '']]);
  });

  it('the tables\' column headers are the fields 6.8 names, in its order', () => {
    expect(WEBHOOK_COLUMNS.map(([h]) => h)).toEqual(['#', 'Host', 'Format', 'State', 'In flight', 'Queued', 'Backlog', 'Last success', 'Last error']);
    expect(BACKLOG_COLUMNS).toEqual(['Time', 'Reason', 'webhook-id', 'Attempts', 'Error', 'Content type', 'Body']);
    expect(MAPPING_COLUMNS).toEqual([['Topic', 'topic'], ['Name', 'name'], ['casdu', 'casdu'], ['ioa', 'ioa'], ['Type', 'type'], ['Value path', 'valuePath'], ['Timestamp path', 'timestampPath']]);
    expect(DATAPOINT_COLUMNS).toEqual(['casdu', 'ioa', 'type', 'value', 'timestamp', 'source']);
  });

  it('the Data points form\'s query: only the fields filled in, trimmed and encoded', () => {
    expect([datapointQuery('', ''), datapointQuery(' 1 ', ''), datapointQuery('', ' 7 '), datapointQuery('1', '7'), datapointQuery('1&x=2', ''), datapointQuery(' ', ' ')])
      .toEqual(['', '?casdu=1', '?ioa=7', '?casdu=1&ioa=7', '?casdu=1%26x%3D2', '']);
  });

  it('a refusal\'s words: the problem\'s detail, else the error\'s message, else the status', () => {
    expect(refusalText(403, { detail: "caller 'v' may not operate the webhooks", message: 'm' })).toBe("caller 'v' may not operate the webhooks");
    expect(refusalText(400, { code: 'invalid_casdu', message: 'casdu must be …' })).toBe('casdu must be …');
    expect(refusalText(503, { detail: '' })).toBe('the connector answered 503');
    expect(refusalText(500, null)).toBe('the connector answered 500');
  });
});

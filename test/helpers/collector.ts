import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** An OTLP attribute value as OTLP/JSON encodes it. */
type AnyValue = { stringValue?: string; intValue?: number | string; boolValue?: boolean; doubleValue?: number };
type KeyValue = { key: string; value: AnyValue };

export interface ExportedSpan {
  readonly service: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly name: string;
  /** 2 server, 3 client, 4 producer, 5 consumer (OTLP SpanKind). */
  readonly kind: number;
  readonly attributes: Record<string, string | number | boolean>;
  readonly links: ReadonlyArray<{ traceId: string; spanId: string; attributes: Record<string, string | number | boolean> }>;
  readonly status: { code?: number; message?: string };
}

export interface ExportRequest {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

const valueOf = (v: AnyValue): string | number | boolean =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.boolValue ?? v.doubleValue ?? '';
const attributesOf = (kvs: KeyValue[] | undefined) => Object.fromEntries((kvs ?? []).map((kv) => [kv.key, valueOf(kv.value)]));

/**
 * A test OTLP/HTTP receiver (a collector's traces endpoint): it keeps every export request, and
 * decodes the OTLP/JSON ones (`http/json`) into spans. It answers 200 with an empty
 * ExportTraceServiceResponse in the request's encoding.
 */
export class Collector {
  readonly requests: ExportRequest[] = [];
  private constructor(private readonly server: Server, readonly endpoint: string) {}

  static async start(): Promise<Collector> {
    let self: Collector | undefined;
    const server = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (d: Buffer) => parts.push(d));
      req.on('end', () => {
        self!.requests.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(parts) });
        const json = String(req.headers['content-type']).includes('json');
        res.writeHead(200, { 'Content-Type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : '');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    self = new Collector(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return self;
  }

  /** Every span of the OTLP/JSON exports so far. */
  spans(): ExportedSpan[] {
    const out: ExportedSpan[] = [];
    for (const r of this.requests) {
      if (!String(r.headers['content-type']).includes('json')) continue;
      const doc = JSON.parse(r.body.toString('utf8')) as {
        resourceSpans: Array<{ resource: { attributes: KeyValue[] }; scopeSpans: Array<{ spans: Array<Record<string, unknown>> }> }>;
      };
      for (const rs of doc.resourceSpans) {
        const service = String(attributesOf(rs.resource.attributes)['service.name']);
        for (const ss of rs.scopeSpans) {
          for (const s of ss.spans) {
            out.push({
              service,
              traceId: String(s.traceId),
              spanId: String(s.spanId),
              parentSpanId: String(s.parentSpanId ?? ''),
              name: String(s.name),
              kind: Number(s.kind),
              attributes: attributesOf(s.attributes as KeyValue[]),
              links: ((s.links ?? []) as Array<{ traceId: string; spanId: string; attributes?: KeyValue[] }>).map((l) => ({
                traceId: l.traceId, spanId: l.spanId, attributes: attributesOf(l.attributes),
              })),
              status: (s.status ?? {}) as { code?: number; message?: string },
            });
          }
        }
      }
    }
    return out;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

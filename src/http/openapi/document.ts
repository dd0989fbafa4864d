/** The parts of the OpenAPI 3.1 document every connector has; each data endpoint adds its own. */
export const problemSchema = {
  type: 'object',
  required: ['type', 'title', 'status', 'detail'],
  properties: { type: { type: 'string' }, title: { type: 'string' }, status: { type: 'integer' }, detail: { type: 'string' } },
};

export const errorSchema = {
  type: 'object',
  required: ['code', 'message'],
  properties: { code: { type: 'string' }, message: { type: 'string' } },
};

export const problem = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
});

/**
 * CONTRACT 7.2: what `callers` adds to an endpoint: 403 (a caller not listed, or one not granted
 * `what`) and 429 (its `maxRequestsPerSecond` used up, with `Retry-After`).
 */
export const callerResponses = (what?: string) => ({
  '403': problem(`callers is set and the caller is not listed in it${what !== undefined ? `, or may not ${what}` : ''}`),
  '429': {
    ...problem("callers is set and the caller's maxRequestsPerSecond is used up in this one-second window"),
    headers: { 'Retry-After': { description: 'whole seconds until the next window (at least 1)', schema: { type: 'integer', minimum: 1 } } },
  },
});

export const jsonError = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
});

export interface OpenApiPart {
  readonly paths: Record<string, unknown>;
  readonly schemas: Record<string, unknown>;
  /** OpenAPI 3.1 `webhooks`: requests this connector makes (the outbound batch POST). */
  readonly webhooks?: Record<string, unknown>;
}

/** Operations that need no API key, whatever the document's global `security` says (CONTRACT 7). */
const OPEN = { security: [] as unknown[] };

/**
 * `servers` from the addresses the connector listens on. An address on every interface
 * (`0.0.0.0`, `::`) is not one a client can call: it becomes a `{host}` variable.
 */
export const serversOf = (addresses: readonly string[]) =>
  addresses.map((a) => {
    const m = /^(https?):\/\/(0\.0\.0\.0|\[::\])(:\d+)?$/.exec(a);
    return m === null
      ? { url: a }
      : { url: `${m[1]}://{host}${m[3] ?? ''}`, variables: { host: { default: 'localhost', description: 'a name or address of the host the connector runs on' } } };
  });

export const openApiDocument = (
  title: string, version: string, secured: boolean, addresses: readonly string[], ...parts: OpenApiPart[]
) => {
  const webhooks = Object.assign({}, ...parts.map((p) => p.webhooks ?? {})) as Record<string, unknown>;
  return {
    openapi: '3.1.0',
    info: { title, version },
    ...(addresses.length > 0 ? { servers: serversOf(addresses) } : {}),
    paths: {
      '/health/live': {
        get: { operationId: 'getLiveness', summary: 'Liveness', ...OPEN, responses: { '200': { description: 'the process runs', content: { 'application/json': { schema: { $ref: '#/components/schemas/Live' } } } } } },
      },
      '/health/ready': {
        get: {
          operationId: 'getReadiness',
          summary: 'Readiness: data store connected, configuration loaded, connector active',
          ...OPEN,
          responses: {
            '200': { description: 'ready', content: { 'application/json': { schema: { $ref: '#/components/schemas/Ready' } } } },
            '503': { description: 'not ready, with the reason', content: { 'application/json': { schema: { $ref: '#/components/schemas/Ready' } } } },
          },
        },
      },
      '/metrics': {
        get: {
          operationId: 'getMetrics',
          summary: 'Prometheus metrics',
          responses: { '200': { description: 'Prometheus text exposition format', content: { 'text/plain': { schema: { type: 'string' } } } }, ...(secured ? { '401': problem('no valid API key') } : {}), ...callerResponses() },
        },
      },
      '/openapi.json': {
        get: {
          operationId: 'getOpenApiDocument',
          summary: 'This document',
          responses: { '200': { description: 'OpenAPI 3.1 document', content: { 'application/json': { schema: { type: 'object', additionalProperties: true } } } }, ...(secured ? { '401': problem('no valid API key') } : {}), ...callerResponses() },
        },
      },
      ...Object.assign({}, ...parts.map((p) => p.paths)),
    },
    ...(Object.keys(webhooks).length > 0 ? { webhooks } : {}),
    components: {
      schemas: {
        Problem: problemSchema,
        Error: errorSchema,
        Live: { type: 'object', required: ['status'], properties: { status: { type: 'string', const: 'ok' } } },
        Ready: { type: 'object', required: ['status'], properties: { status: { type: 'string', enum: ['ready', 'not ready'] }, reason: { type: 'string' } } },
        ...Object.assign({}, ...parts.map((p) => p.schemas)),
      },
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer' },
        apiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key' },
      },
    },
    ...(secured ? { security: [{ bearer: [] }, { apiKey: [] }] } : {}),
  };
};

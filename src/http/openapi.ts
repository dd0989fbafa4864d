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

export const jsonError = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
});

export interface OpenApiPart {
  readonly paths: Record<string, unknown>;
  readonly schemas: Record<string, unknown>;
}

export const openApiDocument = (title: string, version: string, secured: boolean, ...parts: OpenApiPart[]) => ({
  openapi: '3.1.0',
  info: { title, version },
  paths: {
    '/health/live': { get: { summary: 'Liveness', responses: { '200': { description: 'the process runs' } } } },
    '/health/ready': {
      get: {
        summary: 'Readiness: data store connected, configuration loaded, connector active',
        responses: { '200': { description: 'ready' }, '503': { description: 'not ready, with the reason' } },
      },
    },
    '/metrics': { get: { summary: 'Prometheus metrics', responses: { '200': { description: 'text exposition format' } } } },
    ...Object.assign({}, ...parts.map((p) => p.paths)),
  },
  components: {
    schemas: { Problem: problemSchema, Error: errorSchema, ...Object.assign({}, ...parts.map((p) => p.schemas)) },
    securitySchemes: {
      bearer: { type: 'http', scheme: 'bearer' },
      apiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key' },
    },
  },
  ...(secured ? { security: [{ bearer: [] }, { apiKey: [] }] } : {}),
});

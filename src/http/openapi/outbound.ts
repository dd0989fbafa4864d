import { WEBHOOK_SHOWN_SCHEMA } from '../../config/webhookSettings';
import { callerResponses, problem, type OpenApiPart } from './document';

/** The outbound connector's part of its OpenAPI document: GET /api/datapoints, GET /api/webhooks, the webhook batch POST. */
export const dataPointSchema = {
  type: 'object',
  required: ['casdu', 'ioa', 'type', 'value', 'timestamp', 'source'],
  additionalProperties: true,
  properties: {
    casdu: { type: 'integer', minimum: 0, maximum: 65535 },
    ioa: { type: 'integer', minimum: 0, maximum: 16777215 },
    type: { type: 'integer', enum: [1, 13, 30, 32, 36] },
    value: { type: ['boolean', 'number'], description: 'boolean for 1 and 30; number for 13 and 36; integer -64..63 for 32' },
    timestamp: { type: 'string', format: 'date-time', examples: ['2026-11-21T10:15:00.000Z'] },
    source: { type: 'string', description: 'Id of the connector that wrote the point' },
  },
};

const INDEX = { name: 'index', in: 'path', required: true, schema: { type: 'integer', minimum: 0 }, description: 'the webhook\'s index in the configuration' };
/** CONTRACT 6.8: what every backlog endpoint may answer besides its success. */
const BACKLOG_REFUSALS = {
  '401': problem('API keys are configured and none valid was given'),
  ...callerResponses('operate the webhooks (operate)'),
  '404': problem('no webhook has this index'),
  '503': problem('connector inactive, or the data store cannot be reached'),
};

export const outboundOpenApi: OpenApiPart = {
  paths: {
    '/api/webhooks': {
      get: {
        operationId: 'getWebhooks',
        summary: 'Delivery status of every configured webhook: state, failures, in flight, queued, backlog',
        responses: {
          '200': { description: 'one entry per webhook, in configuration order', content: { 'application/json': { schema: { $ref: '#/components/schemas/WebhookStatusList' } } } },
          '401': problem('API keys are configured and none valid was given'),
          ...callerResponses('operate the webhooks (operate)'),
          '503': problem('connector inactive'),
        },
      },
    },
    '/api/webhooks/{index}/interrogation': {
      post: {
        operationId: 'interrogateWebhook',
        summary: 'Send one webhook the current process image (its filter applied), in its order before the batches read after this request',
        parameters: [{ name: 'index', in: 'path', required: true, schema: { type: 'integer', minimum: 0 }, description: 'the webhook\'s index in the configuration' }],
        responses: {
          '202': {
            description: 'queued: this replica performs it',
            content: { 'application/json': { schema: { type: 'object', required: ['webhook', 'state'], properties: { webhook: { type: 'integer' }, state: { type: 'string', enum: ['queued'] } } } } },
          },
          '401': problem('API keys are configured and none valid was given'),
          ...callerResponses('operate the webhooks (operate)'),
          '404': problem('no webhook has this index'),
          '409': problem('an interrogation of this webhook is already queued or running'),
          '503': problem('connector inactive'),
        },
      },
    },
    '/api/webhooks/{index}/backlog': {
      get: {
        operationId: 'listWebhookBacklog',
        summary: 'A page of one webhook\'s backlog entries, oldest first (as `rest-connector deadletter list --webhook N`)',
        parameters: [
          INDEX,
          { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 500, default: 100 } },
          { name: 'after', in: 'query', required: false, schema: { type: 'string', pattern: '^[0-9]+-[0-9]+$' }, description: 'the `next` of the page before' },
        ],
        responses: {
          '200': {
            description: 'the entries, and the `after` of the next page (null after the last entry)',
            content: { 'application/json': { schema: { type: 'object', required: ['entries', 'next'], properties: {
              entries: { type: 'array', items: { type: 'object', required: ['id', 'reason', 'webhookId', 'attempts', 'error', 'contentType', 'bodyBytes', 'bodyPreview', 'at'], properties: {
                id: { type: 'string' }, reason: { type: 'string' }, webhookId: { type: 'string' }, attempts: { type: 'integer' }, error: { type: 'string' }, contentType: { type: 'string' },
                bodyBytes: { type: 'integer', description: 'the stored body\'s length in bytes' }, bodyPreview: { type: 'string', description: 'the body\'s first 2,048 bytes as text' }, at: { type: 'string', format: 'date-time' },
              } } },
              next: { type: ['string', 'null'] },
            } } } },
          },
          '400': problem('limit is not an integer from 1 to 500, or after is not an entry ID'),
          ...BACKLOG_REFUSALS,
        },
      },
      delete: {
        operationId: 'purgeWebhookBacklog',
        summary: 'Delete every backlog entry of one webhook (as `rest-connector deadletter purge --webhook N`)',
        parameters: [INDEX],
        responses: {
          '200': { description: 'how many were deleted', content: { 'application/json': { schema: { type: 'object', required: ['purged'], properties: { purged: { type: 'integer', minimum: 0 } } } } } },
          ...BACKLOG_REFUSALS,
        },
      },
    },
    '/api/webhooks/{index}/backlog/replay': {
      post: {
        operationId: 'replayWebhookBacklog',
        summary: 'Send each backlog entry of one webhook once, oldest first, under its webhook-id; delete those answered 2xx (as `rest-connector deadletter replay --webhook N`)',
        parameters: [INDEX],
        responses: {
          '200': { description: 'how many were delivered and how many failed (kept)', content: { 'application/json': { schema: { type: 'object', required: ['delivered', 'failed'], properties: { delivered: { type: 'integer', minimum: 0 }, failed: { type: 'integer', minimum: 0 } } } } } },
          ...BACKLOG_REFUSALS,
        },
      },
    },
    '/api/datapoints': {
      get: {
        operationId: 'getDataPoints',
        summary: 'Current data points, sorted by casdu then ioa',
        parameters: [
          { name: 'casdu', in: 'query', required: false, schema: { type: 'integer', minimum: 0, maximum: 65535 }, description: 'station address (digits only; leading zeros allowed)' },
          { name: 'ioa', in: 'query', required: false, schema: { type: 'integer', minimum: 0, maximum: 16777215 }, description: 'point address (digits only; leading zeros allowed)' },
        ],
        responses: {
          '200': { description: 'matching points', content: { 'application/json': { schema: { $ref: '#/components/schemas/DataPointList' } } } },
          '400': { description: 'invalid_casdu or invalid_ioa', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
          '401': problem('API keys are configured and none valid was given'),
          ...callerResponses('read data points (no casdu granted), or asked for a casdu outside its casdu; a read of several casdus returns only those granted'),
          '503': problem('connector inactive, or data store not connected'),
        },
      },
    },
  },
  webhooks: {
    dataPointBatch: {
      post: {
        operationId: 'receiveDataPointBatch',
        summary: 'A batch of updates, POSTed by the outbound connector to every configured webhook',
        description:
          'One request per batch per webhook, with the webhook\'s configured headers. De-duplicate by webhook-id: it is the same on every retry, for every webhook, and after a restart.',
        parameters: [
          {
            name: 'webhook-id', in: 'header', required: true, schema: { type: 'string', pattern: '^((r-)?[0-9]+-[0-9]+_[0-9]+-[0-9]+|[gp]i-[0-9]+-[0-9]+-[0-9]+)$' },
            description: '{first}_{last}: stream IDs of the batch\'s first and last entries; r-{first}_{last} for a resend; gi-{P}-{k} (pi- when periodic) for request k of an interrogation of the image as of stream ID P',
          },
          { name: 'webhook-timestamp', in: 'header', required: true, schema: { type: 'string', pattern: '^[0-9]+$' }, description: 'Unix seconds when this attempt was sent' },
          { name: 'webhook-signature', in: 'header', required: false, schema: { type: 'string' }, description: 'with a secret: space-separated `v1,<base64 HMAC-SHA256 of {id}.{timestamp}.{body}>`, one per secret' },
          { name: 'User-Agent', in: 'header', required: true, schema: { type: 'string', pattern: '^rest-connectors/' } },
        ],
        requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/DataPointList' } } } },
        responses: {
          '2XX': { description: 'delivered' },
          '408': { description: 'retried with backoff' },
          '429': { description: 'retried; Retry-After honoured up to 30 s' },
          '5XX': { description: 'retried with backoff (Retry-After honoured on 503)' },
          default: { description: 'any other answer: not retried, the batch is dead-lettered for this webhook' },
        },
      },
    },
  },
  schemas: {
    WebhookStatusList: {
      type: 'object', required: ['webhooks'],
      properties: {
        webhooks: {
          type: 'array',
          items: {
            type: 'object',
            required: [
              'index', 'host', 'state', 'consecutiveFailures', 'lastSuccessAt', 'lastFailureAt', 'lastError', 'inFlight', 'queued', 'backlog',
              ...Object.keys(WEBHOOK_SHOWN_SCHEMA), 'interrogation', 'lastInterrogationAt',
            ],
            properties: {
              index: { type: 'integer', minimum: 0 },
              host: { type: 'string', description: 'host and port of the URL; never the full URL, query, header or secret' },
              state: { type: 'string', enum: ['healthy', 'retrying', 'open', 'redriving', 'disabled'] },
              consecutiveFailures: { type: 'integer', minimum: 0, description: 'batches in a row that ended in the backlog' },
              lastSuccessAt: { type: ['string', 'null'], format: 'date-time' },
              lastFailureAt: { type: ['string', 'null'], format: 'date-time' },
              lastError: { type: ['string', 'null'] },
              inFlight: { type: 'integer', minimum: 0 },
              queued: { type: 'integer', minimum: 0 },
              backlog: { type: 'integer', minimum: 0, description: 'batches waiting to be redriven' },
              // the webhook's settings, as `src/config/webhookSettings.ts` declares them
              ...WEBHOOK_SHOWN_SCHEMA,
              interrogation: {
                type: ['object', 'null'], description: 'the interrogation running on this replica (null: none)',
                required: ['cause', 'startedAt', 'sent'],
                properties: { cause: { type: 'string', enum: ['interrogation', 'periodic'] }, startedAt: { type: 'string', format: 'date-time' }, sent: { type: 'integer', minimum: 0, description: 'points answered 2xx so far' } },
              },
              lastInterrogationAt: { type: ['string', 'null'], format: 'date-time', description: 'when this replica last completed one' },
            },
          },
        },
      },
    },
    DataPoint: dataPointSchema,
    DataPointList: {
      type: 'object', required: ['datapoints'],
      properties: {
        datapoints: { type: 'array', items: { $ref: '#/components/schemas/DataPoint' } },
        cause: { type: 'string', enum: ['interrogation', 'periodic', 'resend'], description: 'in a webhook request: why it was sent (absent: a live batch)' },
      },
    },
  },
};

import { jsonError, problem, type OpenApiPart } from './document';

/** The inbound connector's part of its OpenAPI document: POST /api/datapoints. */
export const inboundOpenApi: OpenApiPart = {
  paths: {
    '/api/datapoints': {
      post: {
        operationId: 'postDataPoints',
        summary: "Apply the topic's mappings to a JSON object and write the data points, all or nothing",
        parameters: [
          { name: 'topic', in: 'query', required: true, schema: { type: 'string', minLength: 1 }, description: 'the mapping group applied to the payload' },
          {
            name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7E]+$' },
            description: 'makes a retry safe: a repeated request with the same key, topic and body gets the stored answer (header Idempotent-Replayed: true) and writes nothing',
          },
          {
            name: 'traceparent', in: 'header', required: false, schema: { type: 'string' },
            description: 'W3C trace context: with tracing on, the request\'s server span continues this trace, and the written entries carry it on to the webhook requests (their spans link to it); ignored when tracing is off',
          },
        ],
        requestBody: {
          required: true,
          description: 'any JSON object; the topic\'s mappings read their values from it by path',
          content: { 'application/json': { schema: { type: 'object', additionalProperties: true } } },
        },
        responses: {
          '200': { description: 'every mapping succeeded and the data points were written', content: { 'application/json': { schema: { $ref: '#/components/schemas/InboundSuccess' } } } },
          '400': jsonError('missing_topic, invalid_json, invalid_body or invalid_idempotency_key'),
          '409': jsonError('idempotency_key_in_progress: a request with this Idempotency-Key is still being processed'),
          '401': problem('API keys are configured and none valid was given'),
          '404': jsonError("unknown_topic: No mappings are configured for topic 'T'"),
          '413': jsonError('payload_too_large'),
          '415': jsonError('unsupported_media_type'),
          '422': { description: 'one or more mappings failed; nothing was written (or idempotency_key_reused: the key was used for another topic or body)', content: { 'application/json': { schema: { $ref: '#/components/schemas/InboundFailure' } } } },
          '503': problem('connector inactive, data store not connected, read-only or out of memory (then with Retry-After), outcome unknown, or not confirmed by Datastore:WaitReplicas replicas'),
        },
      },
    },
  },
  schemas: {
    InboundSuccess: {
      type: 'object', required: ['topic', 'succeeded'],
      properties: { topic: { type: 'string' }, succeeded: { type: 'array', items: { type: 'string' } } },
    },
    InboundFailure: {
      type: 'object', required: ['topic', 'message', 'failed', 'succeeded'],
      properties: {
        topic: { type: 'string' },
        message: { type: 'string', examples: ['1 of 3 mappings failed'] },
        failed: { type: 'array', items: { type: 'object', required: ['signalId', 'error'], properties: { signalId: { type: 'string' }, error: { type: 'string' } } } },
        succeeded: { type: 'array', items: { type: 'object', required: ['signalId'], properties: { signalId: { type: 'string' } } } },
      },
    },
  },
};

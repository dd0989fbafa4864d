import { callerResponses, jsonError, problem, type OpenApiPart } from './document';

/** The inbound connector's part of its OpenAPI document: POST /api/datapoints (an array body of at most `maxBatchItems` objects). */
export const inboundOpenApi = (maxBatchItems: number): OpenApiPart => ({
  paths: {
    '/api/datapoints': {
      post: {
        operationId: 'postDataPoints',
        summary: "Apply the topic's mappings to a JSON object, or to each of an array of them, and write the data points, all or nothing",
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
          description: `any JSON object, the topic's mappings reading their values from it by path; or an array of 1 to ${maxBatchItems} (Http:MaxBatchItems) objects — buffered readings, many devices — every mapping applied to each item, the image ending on the last item's values and process:updates getting every item's entries in order`,
          content: {
            'application/json': {
              schema: { oneOf: [{ type: 'object', additionalProperties: true }, { type: 'array', minItems: 1, maxItems: maxBatchItems, items: { type: 'object', additionalProperties: true } }] },
            },
          },
        },
        responses: {
          '200': { description: 'every mapping succeeded and the data points were written', content: { 'application/json': { schema: { $ref: '#/components/schemas/InboundSuccess' } } } },
          '400': jsonError('missing_topic, invalid_json, invalid_body or invalid_idempotency_key'),
          '409': jsonError('idempotency_key_in_progress: a request with this Idempotency-Key is still being processed'),
          '401': problem('API keys are configured and none valid was given'),
          ...callerResponses('write this topic (topics)'),
          '404': jsonError("unknown_topic: No mappings are configured for topic 'T'"),
          '413': jsonError('payload_too_large'),
          '415': jsonError('unsupported_media_type'),
          '422': { description: 'one or more mappings failed; nothing was written (or idempotency_key_reused: the key was used for another topic or body)', content: { 'application/json': { schema: { $ref: '#/components/schemas/InboundFailure' } } } },
          '503': problem('connector inactive, data store not connected, read-only or out of memory (then with Retry-After), outcome unknown, or not confirmed by Datastore:WaitReplicas replicas'),
        },
      },
    },
    '/api/mappings': {
      get: {
        operationId: 'getMappings',
        summary: 'The mappings as configured (defaults filled in); with callers, only the topics the caller may write',
        responses: {
          '200': { description: 'the mappings', content: { 'application/json': { schema: { type: 'object', required: ['mappings'], properties: { mappings: { type: 'array', items: { type: 'object', additionalProperties: true } } } } } } },
          '401': problem('API keys are configured and none valid was given'),
          ...callerResponses('use this endpoint'),
        },
      },
    },
    '/api/mappings/test': {
      post: {
        operationId: 'testMappings',
        summary: 'What a POST of this body would write, or its 422 answer — writing nothing (as `rest-connector mappings test`)',
        parameters: [{ name: 'topic', in: 'query', required: true, schema: { type: 'string', minLength: 1 } }],
        requestBody: { required: true, content: { 'application/json': { schema: { oneOf: [{ type: 'object', additionalProperties: true }, { type: 'array', minItems: 1, maxItems: maxBatchItems, items: { type: 'object', additionalProperties: true } }] } } } },
        responses: {
          '200': { description: 'every mapping succeeded: the data points a POST would write, in order (nothing was written)', content: { 'application/json': { schema: { type: 'object', required: ['topic', 'succeeded', 'datapoints'], properties: { topic: { type: 'string' }, succeeded: { type: 'array', items: { type: 'string' } }, datapoints: { type: 'array', items: { type: 'object', additionalProperties: true } } } } } } },
          '400': jsonError('missing_topic, invalid_json or invalid_body'),
          '401': problem('API keys are configured and none valid was given'),
          ...callerResponses('write this topic (topics)'),
          '404': jsonError('unknown_topic'),
          '413': jsonError('payload_too_large'),
          '415': jsonError('unsupported_media_type or unsupported_encoding'),
          '422': { description: 'one or more mappings failed (what a POST would answer; nothing was written)', content: { 'application/json': { schema: { $ref: '#/components/schemas/InboundFailure' } } } },
        },
      },
    },
  },
  schemas: {
    InboundSuccess: {
      type: 'object', required: ['topic', 'succeeded'],
      properties: {
        topic: { type: 'string' },
        items: { type: 'integer', minimum: 1, description: 'an array body\'s length (absent for an object body)' },
        succeeded: { type: 'array', items: { type: 'string' }, description: 'the mappings\' names (each once for an array body)' },
      },
    },
    InboundFailure: {
      type: 'object', required: ['topic', 'message', 'failed', 'succeeded'],
      properties: {
        topic: { type: 'string' },
        message: { type: 'string', examples: ['1 of 3 mappings failed'], description: 'K of M: M is the items times the topic\'s mappings for an array body' },
        items: { type: 'integer', minimum: 1, description: 'an array body\'s length (absent for an object body)' },
        failed: {
          type: 'array', description: 'in item order, and mapping order within an item',
          items: {
            type: 'object', required: ['signalId', 'error'],
            properties: { signalId: { type: 'string' }, error: { type: 'string' }, item: { type: 'integer', minimum: 0, description: 'the index of the array body\'s item it failed on' } },
          },
        },
        succeeded: {
          type: 'array', description: 'the mappings that succeeded (on every item of an array body)',
          items: { type: 'object', required: ['signalId'], properties: { signalId: { type: 'string' } } },
        },
      },
    },
  },
});

import * as E from 'fp-ts/Either';
import type { ServerResponse } from 'node:http';
import { applyToPayload } from '../../mapping/apply';
import { mayWrite } from '../../config/callerSettings';
import { mappingShown } from '../../config/mappingSettings';
import { failureBody, okBody } from '../../mapping/responses';
import { itemCount } from '../../mapping/payload';
import type { Mapping } from '../../mapping/types';
import type { DataRoute } from '../app/app';
import { sendError, sendJsonText, sendProblem } from '../app/problem';
import { readBody } from './bodyBudget';
import { answerOf, forbiddenTopicDetail, type InboundError } from './errors';
import { decodeHead, decodeRest, type InboundDeps } from './route';

/**
 * CONTRACT 6.8: what the operator page shows of the inbound connector — `GET /api/mappings` (the
 * mappings as configured; with `callers`, only the topics the caller may write) and
 * `POST /api/mappings/test?topic=T`, the answer `rest-connector mappings test` prints for the body:
 * the checks of a POST in its order (the caller's `topics` too), the mappings applied, and nothing
 * written — no point, no error entry, no idempotency key.
 */
export type MappingRouteDeps = Pick<InboundDeps, 'connectorId' | 'topics' | 'maxBodyBytes' | 'maxBatchItems' | 'bodyBudget'> & {
  readonly mappings: readonly Mapping[];
};

const refused = (res: ServerResponse, e: InboundError): void => {
  const a = answerOf(e);
  if (a.kind === 'none') return;
  if (a.close === true) res.setHeader('Connection', 'close');
  if (a.kind === 'error') sendError(res, a.status, a.code, a.message);
  else sendProblem(res, a.status, a.detail, a.headers);
};

export const mappingRoutes = (d: MappingRouteDeps): DataRoute[] => [
  {
    method: 'get',
    path: '/api/mappings',
    handler: (_req, res, ctx) => {
      const shown = d.mappings.filter((m) => ctx.grant === undefined || mayWrite(ctx.grant, m.topic)).map(mappingShown);
      sendJsonText(res, 200, JSON.stringify({ mappings: shown }));
    },
  },
  {
    method: 'post',
    path: '/api/mappings/test',
    handler: async (req, res, ctx) => {
      const who = ctx.grant !== undefined && ctx.caller !== undefined ? { caller: ctx.caller, grant: ctx.grant } : undefined;
      const topic = decodeHead(req.url ?? '', req.headers, who);
      if (E.isLeft(topic)) {
        if (topic.left.tag === 'forbidden_topic') ctx.forbid(forbiddenTopicDetail(topic.left.caller, topic.left.topic));
        else refused(res, topic.left);
        return;
      }
      const body = await readBody(req, res, d.maxBodyBytes, d.bodyBudget);
      if (!body.ok) return refused(res, body.reason === 'busy' ? { tag: 'bodies_busy' } : body.reason === 'too_large' ? { tag: 'payload_too_large', maxBytes: d.maxBodyBytes } : { tag: 'body_aborted' });
      // an Idempotency-Key is not looked at: nothing is stored under it
      const decoded = decodeRest(d, topic.right, body, undefined);
      if (E.isLeft(decoded)) return refused(res, decoded.left);
      const { mappings, payload } = decoded.right;
      const items = itemCount(payload);
      const result = applyToPayload(mappings, payload, ctx.receivedAt.toISOString(), d.connectorId);
      if (E.isLeft(result)) return sendJsonText(res, 422, JSON.stringify(failureBody(topic.right, result.left, items)));
      // the data points in the order a POST would append them
      sendJsonText(res, 200, JSON.stringify({ ...okBody(topic.right, result.right, items), datapoints: result.right.map((p) => p.point) }));
    },
  },
];

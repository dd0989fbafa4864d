import type { Response } from 'express';
import { STATUS_CODES } from 'node:http';

/** RFC 9457 problem details (CONTRACT 6.3). */
export const sendProblem = (res: Response, status: number, detail: string, headers: Record<string, string> = {}): void => {
  res
    .status(status)
    .set({ 'Content-Type': 'application/problem+json', ...headers })
    .send(JSON.stringify({ type: 'about:blank', title: STATUS_CODES[status] ?? 'Error', status, detail }));
};

/** The `{"code","message"}` bodies of the contract's error tables. */
export const sendError = (res: Response, status: number, code: string, message: string): void => {
  sendJsonText(res, status, JSON.stringify({ code, message }));
};

export const NOT_CONNECTED = 'data store is not connected';
export const INACTIVE = 'connector is inactive';

/** A JSON body already serialised: no content-type lookup, no ETag, one write. */
export const sendJsonText = (res: Response, status: number, body: string): void => {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
};

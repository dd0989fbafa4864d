import { STATUS_CODES, type ServerResponse } from 'node:http';

/** RFC 9457 problem details (CONTRACT 6.3). */
export const sendProblem = (res: ServerResponse, status: number, detail: string, headers: Record<string, string> = {}): void => {
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  sendText(res, status, 'application/problem+json; charset=utf-8', JSON.stringify({ type: 'about:blank', title: STATUS_CODES[status] ?? 'Error', status, detail }));
};

/** The `{"code","message"}` bodies of the contract's error tables. */
export const sendError = (res: ServerResponse, status: number, code: string, message: string): void => {
  sendJsonText(res, status, JSON.stringify({ code, message }));
};

export const NOT_CONNECTED = 'data store is not connected';
export const INACTIVE = 'connector is inactive';

/** A JSON body already serialised: no content-type lookup, no ETag, one write. */
export const sendJsonText = (res: ServerResponse, status: number, body: string): void => sendText(res, status, 'application/json; charset=utf-8', body);

/** One write (Node leaves the body out of an answer to HEAD by itself). */
const sendText = (res: ServerResponse, status: number, contentType: string, body: string): void => {
  res.statusCode = status;
  res.setHeader('Content-Type', contentType);
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
};

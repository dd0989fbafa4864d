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
  res.status(status).type('application/json').send(JSON.stringify({ code, message }));
};

export const NOT_CONNECTED = 'data store is not connected';
export const INACTIVE = 'connector is inactive';

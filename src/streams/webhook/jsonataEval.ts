import jsonata from 'jsonata';

/**
 * A `jsonata` format's evaluation (CONTRACT 4.7), as its evaluation process runs it
 * (`jsonataProcessMain.ts`): the default body's text in, the body's bytes out — or nothing, or why it
 * cannot be rendered. Pure but for JSONata itself; no limit of time here: the process is ended from
 * outside (`jsonataProcess.ts`), the only way to stop a regular expression or a built-in.
 */
export interface CompiledJsonata {
  readonly expression: jsonata.Expression;
  readonly output: 'json' | 'ndjson';
}

export const compileJsonata = (expression: string, output: 'json' | 'ndjson' = 'json'): CompiledJsonata => ({ expression: jsonata(expression), output });

/** What an evaluation came to: the body's UTF-8 bytes, JSONata's nothing, or a failure to render. */
export type JsonataResult =
  | { readonly kind: 'body'; readonly bytes: Uint8Array }
  | { readonly kind: 'nothing' }
  | { readonly kind: 'failed'; readonly error: string };

/** CONTRACT 4.7 "Size": the message of a body that is too long. */
export const tooLong = (bytes: number): string => `body of ${bytes} bytes exceeds Webhooks:MaxBodyBytes`;

/** The JSONata result as the body's text; undefined for JSONata's nothing. Throws what cannot be sent. */
export const jsonataText = async (f: CompiledJsonata, input: unknown): Promise<string | undefined> => {
  let result: unknown;
  try {
    result = await f.expression.evaluate(input);
  } catch (err) {
    const e = err as { code?: string; message?: string; position?: number };
    throw new Error(`${e.message ?? String(err)}${e.code !== undefined ? ` (${e.code}${e.position !== undefined ? ` at character ${e.position}` : ''})` : ''}`);
  }
  if (result === undefined) return undefined;
  if (f.output === 'json') return JSON.stringify(result);
  if (!Array.isArray(result)) throw new Error(`output "ndjson" needs an array, the expression gave ${result === null ? 'null' : typeof result}`);
  let text = '';
  // Stryker disable next-line StringLiteral: JSONata's arrays hold no undefined or functions (JSON.stringify's undefined)
  for (const item of result) text += `${JSON.stringify(item) ?? 'null'}\n`;
  return text;
};

/**
 * The body of the default body's text `input`: parsed, evaluated, written as `output` says and
 * held to `maxBodyBytes` (a text longer in characters than the limit is longer in bytes too, and
 * is not encoded at all). The bytes are a buffer of their own.
 */
export const evaluateBody = async (f: CompiledJsonata, input: string, maxBodyBytes: number): Promise<JsonataResult> => {
  try {
    const text = await jsonataText(f, JSON.parse(input));
    if (text === undefined || text.length === 0) return { kind: 'nothing' };
    const length = Buffer.byteLength(text, 'utf8');
    if (length > maxBodyBytes) return { kind: 'failed', error: tooLong(length) };
    return { kind: 'body', bytes: new TextEncoder().encode(text) };
  } catch (err) {
    return { kind: 'failed', error: err instanceof Error ? err.message : String(err) };
  }
};

/**
 * CONTRACT 9: traces, as the code in the middle sees them — a port. The one implementation
 * (`runtime/tracing.ts`) speaks OpenTelemetry; it exists only when tracing is on. When it is off
 * the port is `undefined` and the code that would call it does nothing at all: no span, no field
 * in a stream entry, no header.
 */

/** A stream entry's trace context as stored with it (field `traceparent`, W3C trace context). */
export interface EntryTrace {
  readonly id: string;
  readonly traceparent: string;
}

/** Request headers as Node gives them. */
export type Headers = Readonly<Record<string, string | string[] | undefined>>;

export interface Tracing {
  /** A server span for one request to a data route, continuing the caller's `traceparent`. */
  request(method: string, route: string, headers: Headers): RequestTrace;
  /**
   * A `process process:updates` span for one request to a webhook (first attempt, retry, probe,
   * redrive or replay), linked to each entry it carries that has a trace context.
   */
  delivery(d: DeliveryFacts): DeliveryTrace;
}

export interface RequestTrace {
  /** Who called (CONTRACT 7.1), once known. */
  caller(name: string): void;
  /** A producer span `send process:updates` for one write of `points` stream entries. */
  producer(points: number): WriteTrace;
  /** The answer's status. */
  end(status: number): void;
}

export interface WriteTrace {
  /** The context to store in each entry of the write; undefined when the span is not sampled (nothing is stored). */
  readonly traceparent: string | undefined;
  end(error?: string): void;
}

export interface DeliveryFacts {
  readonly webhook: number;
  /** Scheme, host, port and path of the webhook's URL (no user information, no query). */
  readonly url: string;
  readonly webhookId: string;
  readonly points: number;
  readonly group: string;
  readonly entries: readonly EntryTrace[];
}

export interface DeliveryTrace {
  /** A client span for one HTTP request of the delivery; `traceparent` goes out with it (undefined when not sampled). */
  call(): CallTrace;
  /** The delivery's outcome: the status that ended it, or why it failed. */
  end(outcome: { readonly status?: number; readonly error?: string }): void;
}

export interface CallTrace {
  readonly traceparent: string | undefined;
  end(outcome: { readonly status?: number; readonly error?: string }): void;
}

import * as E from 'fp-ts/Either';
import {
  catchError, distinctUntilChanged, EMPTY, exhaustMap, filter, map, type Observable, type SchedulerLike,
  skip, startWith, timer,
} from 'rxjs';
import { parseManagedSettings, settingsFingerprint, type ManagedSettings } from '../config/managed';

export type ConfigEvent =
  | { readonly kind: 'changed'; readonly settings: ManagedSettings }
  | { readonly kind: 'invalid'; readonly errors: readonly string[] }
  | { readonly kind: 'deleted' };

export interface WatchConfigOptions {
  /** Reads the key; `null` when absent. Errors (e.g. the data store is down) skip that poll. */
  readonly read: () => Observable<string | null>;
  /** The text the connector started with (`null`: started on the defaults). */
  readonly initialRaw: string | null;
  readonly current: ManagedSettings;
  readonly connector: 'outbound' | 'inbound';
  readonly intervalMs: number;
  /** Problems beyond the text's decoding (e.g. files it names that do not load); none by default. */
  readonly check?: (s: ManagedSettings) => readonly string[];
  readonly scheduler?: SchedulerLike;
}

/**
 * Polls the config key and emits what the connector must react to (CONTRACT 2): a valid change
 * (a different fingerprint, or the key appearing after a start on defaults), an invalid text, or
 * the key's deletion. Rewriting the same settings emits nothing.
 */
export const watchConfig$ = (o: WatchConfigOptions): Observable<ConfigEvent> => {
  const currentPrint = settingsFingerprint(o.current, o.connector);
  return timer(o.intervalMs, o.intervalMs, o.scheduler).pipe(
    exhaustMap(() => o.read().pipe(catchError(() => EMPTY))),
    startWith(o.initialRaw),
    distinctUntilChanged(),
    skip(1),
    map((raw): ConfigEvent | null => {
      if (raw === null) return { kind: 'deleted' };
      const decoded = parseManagedSettings(raw);
      if (E.isLeft(decoded)) return { kind: 'invalid', errors: decoded.left };
      const problems = o.check?.(decoded.right) ?? [];
      if (problems.length > 0) return { kind: 'invalid', errors: problems };
      const changed = o.initialRaw === null || settingsFingerprint(decoded.right, o.connector) !== currentPrint;
      return changed ? { kind: 'changed', settings: decoded.right } : null;
    }),
    filter((e): e is ConfigEvent => e !== null),
  );
};

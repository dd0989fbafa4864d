/**
 * What a start-up acquired, released in one place: each resource with its release as it is
 * acquired, every release run once, the last acquired first, whatever way the start-up or the run
 * ends — a startup error, a signal, a configuration change, a failure. A release that fails does
 * not keep the others from running.
 */
export interface Resources {
  /** Remembers how to release `resource` (just acquired); returns it. */
  hold<A>(resource: A, release: (a: A) => unknown): A;
  /** Remembers something to undo. */
  onRelease(release: () => unknown): void;
  /** Releases everything held, last first; later calls do nothing. */
  release(): Promise<void>;
}

export const resources = (): Resources => {
  const releases: Array<() => unknown> = [];
  return {
    hold: (resource, release) => {
      releases.push(() => release(resource));
      return resource;
    },
    onRelease: (release) => void releases.push(release),
    release: async () => {
      for (let r = releases.pop(); r !== undefined; r = releases.pop()) {
        try {
          await r();
        } catch {
          /* the others are released all the same */
        }
      }
    },
  };
};

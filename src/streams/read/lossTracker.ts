import type { GroupHealth } from './groupHealth';

export interface LossReport {
  readonly newlyLost: number | null;
  readonly lagWarning: boolean;
}

/**
 * Turns successive health readings into what to report: entries newly found lost (each counted
 * once), and a lag warning when the lag first passes half the stream's length.
 */
export const makeLossTracker = () => {
  let reported = 0;
  let unknownReported = false;
  let warned = false;
  return (h: GroupHealth): LossReport => {
    let newlyLost: number | null = 0;
    if (h.behindFirstEntry) {
      if (h.trimmedUnread === null) {
        newlyLost = unknownReported ? 0 : null;
        unknownReported = true;
      }
      else if (h.trimmedUnread > reported) {
        newlyLost = h.trimmedUnread - reported;
        reported = h.trimmedUnread;
      }
    }
    const over = h.lag !== null && h.length > 0 && h.lag > h.length / 2;
    const lagWarning = over && !warned;
    warned = over;
    return { newlyLost, lagWarning };
  };
};

/**
 * The SIGKILL tests' verdict on an event that ran more than once (BullMQ, pg-boss, SQS alike). The
 * one window no receiver closes: a worker killed after its handler's last side effect and before the
 * store recorded the completion, so the event runs again elsewhere. A second run is that window when
 * the first run's process was killed after the run started and never recorded the completion; judged
 * by what was recorded, not by timing (on a loaded machine a killed worker's event loop may lag
 * seconds behind its handler). `kills` are the times each victim was seen dead, so that a run it
 * logged between the signal and its death counts as cut short. Anything else (a third run, a run
 * whose worker lived on) is unexplained.
 */

/** One handler run, as the workers log it. */
export interface LoggedRun {
  readonly pid: number;
  readonly at: number;
}

/** The second runs sorted into the crash window and the unexplained, each as `id: runs` for messages. */
export function judgeSecondRuns(
  runs: ReadonlyMap<string, readonly LoggedRun[]>,
  kills: readonly { readonly pid: number; readonly at: number }[],
  recorded: ReadonlySet<string>,
): { crashWindow: string[]; unexplained: string[] } {
  const killedAt = new Map(kills.map((kill) => [kill.pid, kill.at]));
  const crashWindow: string[] = [];
  const unexplained: string[] = [];
  for (const [eventId, list] of runs) {
    if (list.length === 1) continue;
    const [first] = [...list].sort((a, b) => a.at - b.at);
    const killed = killedAt.get(first!.pid);
    const explained =
      list.length === 2 &&
      killed !== undefined &&
      killed >= first!.at &&
      !recorded.has(`${eventId} ${first!.pid}`);
    (explained ? crashWindow : unexplained).push(`${eventId}: ${JSON.stringify(list)}`);
  }
  return { crashWindow, unexplained };
}

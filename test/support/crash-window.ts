/**
 * The SIGKILL tests' verdict on an event that ran more than once (BullMQ, pg-boss, SQS, RabbitMQ,
 * NATS alike). The one window no receiver closes: a worker killed after its handler's last side
 * effect and before the store recorded the completion, so the event runs again elsewhere. An extra
 * run is that window when the run before it was cut short so: its process was killed after the run
 * started and never recorded the completion. Judged by what was recorded, not by timing (on a loaded
 * machine a killed worker's event loop may lag seconds behind its handler). `kills` are the times each
 * victim was seen dead, so that a run it logged between the signal and its death counts as cut short.
 * A third run is explained only when the second run was cut short the same way: retried runs come
 * back together (pg-boss expires a dead worker's jobs at once), and a kill a second can meet such a
 * batch in its window again (CI saw two events of one batch run three times, each earlier run in a
 * killed worker). Anything else (a run whose worker lived on, or recorded the completion) is
 * unexplained.
 */

/** One handler run, as the workers log it. */
export interface LoggedRun {
  readonly pid: number;
  readonly at: number;
}

/**
 * The events that ran more than once, sorted into the crash window and the unexplained, each as
 * `id: runs` for messages (an unexplained one also says, per run, whether its worker was killed after
 * it and whether it recorded the completion).
 */
export function judgeSecondRuns(
  runs: ReadonlyMap<string, readonly LoggedRun[]>,
  kills: readonly { readonly pid: number; readonly at: number }[],
  recorded: ReadonlySet<string>,
): { crashWindow: string[]; unexplained: string[] } {
  const killedAt = new Map(kills.map((kill) => [kill.pid, kill.at]));
  const cutShort = (eventId: string, run: LoggedRun): boolean => {
    const killed = killedAt.get(run.pid);
    return killed !== undefined && killed >= run.at && !recorded.has(`${eventId} ${run.pid}`);
  };
  const crashWindow: string[] = [];
  const unexplained: string[] = [];
  for (const [eventId, list] of runs) {
    if (list.length === 1) continue;
    const sorted = [...list].sort((a, b) => a.at - b.at);
    // Every run but the last was cut short in the window (the last may have been too).
    if (sorted.slice(0, -1).every((run) => cutShort(eventId, run))) {
      crashWindow.push(`${eventId}: ${JSON.stringify(sorted)}`);
    } else {
      const told = sorted.map((run) => ({
        ...run,
        killedAt: killedAt.get(run.pid) ?? null,
        recorded: recorded.has(`${eventId} ${run.pid}`),
      }));
      unexplained.push(`${eventId}: ${JSON.stringify(told)}`);
    }
  }
  return { crashWindow, unexplained };
}

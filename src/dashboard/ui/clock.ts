import { useEffect, useState } from 'preact/hooks';

type Listener = (now: number) => void;

const listeners = new Set<Listener>();
let timer: ReturnType<typeof setInterval> | undefined;

/**
 * One interval for the whole page, however many countdowns show: a timer per row would cost a thousand
 * wake-ups a second with a full history. It runs only while something listens.
 */
function subscribe(listener: Listener): () => void {
  listeners.add(listener);
  if (timer === undefined) {
    timer = setInterval(() => {
      const now = Date.now();
      for (const each of listeners) each(now);
    }, 1000);
  }
  return () => {
    listeners.delete(listener);
    if (listeners.size === 0 && timer !== undefined) {
      clearInterval(timer);
      timer = undefined;
    }
  };
}

/** The current time, re-rendering the caller once a second while `active`. */
export function useNow(active = true): number {
  const [now, setNow] = useState(Date.now);
  useEffect(() => {
    if (!active) return undefined;
    setNow(Date.now());
    return subscribe(setNow);
  }, [active]);
  return now;
}

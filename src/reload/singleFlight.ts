/**
 * At most one run at a time, and no lost request: a call while a run is in progress
 * schedules exactly one more run after it, shared by every call made meanwhile (so a
 * burst of file events costs two runs, not one per event). The follow-up run is forced
 * when any of the calls it serves was.
 *
 * `run` must not reject (the caller turns its errors into a result).
 */
export function singleFlight<R>(
  run: (force: boolean) => Promise<R>,
): (force: boolean) => Promise<R> {
  let current: Promise<R> | null = null;
  let queued: { force: boolean; promise: Promise<R> } | null = null;

  const start = (force: boolean): Promise<R> => {
    const running: Promise<R> = run(force).finally(() => {
      if (current === running) current = null;
    });
    current = running;
    return running;
  };

  return (force) => {
    if (current === null) return start(force);
    if (queued === null) {
      const next: { force: boolean; promise: Promise<R> } = { force, promise: current };
      next.promise = current.then(() => {
        queued = null;
        return start(next.force);
      });
      queued = next;
    } else if (force) {
      queued.force = true;
    }
    return queued.promise;
  };
}

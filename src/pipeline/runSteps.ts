/**
 * Runs an ordered list of named steps over one value. A step answers nothing (done,
 * go on), a promise (the runner waits, then goes on with the next step), or throws (the
 * refusal, as is). Synchronous up to the first step that waits, so a cached token passes
 * the whole list without a tick of the event loop; only a waiting request builds a
 * closure.
 */

export interface Step<Value> {
  /** What the step checks, for the docs, the tests and a trace. */
  readonly name: string;
  run(value: Value): void | Promise<void>;
}

export function runSteps<Value>(
  steps: readonly Step<Value>[],
  value: Value,
  from = 0,
): void | Promise<void> {
  for (let i = from; i < steps.length; i++) {
    const waiting = (steps[i] as Step<Value>).run(value);
    if (waiting !== undefined) return waiting.then(() => runSteps(steps, value, i + 1));
  }
  return undefined;
}

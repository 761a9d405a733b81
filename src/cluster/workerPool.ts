/**
 * The primary's workers: forks `size` of them (node:cluster: they share the public
 * listening socket), keeps that many running, and talks to them.
 *
 * A worker that exits while the pool is not stopping is logged, counted and replaced; one
 * that dies within `EARLY_EXIT_MS` of its start waits longer before its replacement
 * (100 ms doubling up to 10 s), so a worker that cannot start does not fork in a loop. A
 * worker that exits before the first `size` workers all listen fails the start
 * (`started` rejects): the worker printed why.
 *
 * A worker is *registered* once the primary sent it the revocation list (its `hello`):
 * from then on it gets every revocation. It is *listening* once it said so.
 *
 * Connections: the workers accept on the shared listening socket themselves
 * (`SCHED_NONE`). With node:cluster's round-robin the primary accepts and sends each
 * connection to a worker, and one sent to a worker that dies before taking it is never
 * closed: its client hangs and the primary leaks the descriptor (docs/workers.md).
 */
import cluster, { type Worker } from 'node:cluster';
import { setTimeout as delay } from 'node:timers/promises';
import type { PrimaryMessage, WorkerMessage } from './messages.js';
import { isPortariaMessage } from './messages.js';
import { PendingAnswers } from './pendingAnswers.js';

const EARLY_EXIT_MS = 10_000;
const MAX_RESPAWN_DELAY_MS = 10_000;
/**
 * How long after a worker's exit its channel may take to close. Node emits `disconnect`
 * only once a message it was reading completes: a worker that died in the middle of
 * writing one (a log line cut by its exit) never completes it, and `disconnect` never
 * comes. Past this, the worker counts as gone without it.
 */
const CHANNEL_CLOSE_MS = 1000;

export interface WorkerExit {
  readonly workerId: number;
  readonly pid: number | undefined;
  readonly code: number | null;
  readonly signal: string | null;
}

export interface WorkerPoolHooks {
  /** A worker's message other than an answer (`hello`, `log`, `limit`, `revoke`, …). */
  message(worker: Worker, message: WorkerMessage): void;
  started(workerId: number, pid: number | undefined): void;
  /** A worker exited while the pool was running: it is being replaced. */
  replaced(exit: WorkerExit, delayMs: number): void;
}

export class WorkerPool {
  readonly size: number;
  readonly #hooks: WorkerPoolHooks;
  readonly #pending = new PendingAnswers();
  readonly #registered = new Set<Worker>();
  readonly #listening = new Set<Worker>();
  readonly #startedAt = new Map<Worker, number>();
  /** Resolves once a worker exited and its channel closed (or `CHANNEL_CLOSE_MS` passed). */
  readonly #gone = new Map<Worker, Promise<void>>();
  #earlyExits = 0;
  #stopping = false;
  #startup: { resolve: (url: string) => void; reject: (error: Error) => void } | null = null;
  #publicUrl = '';
  /** Added to every worker's environment (a group secret the workers share). */
  readonly #env: Readonly<Record<string, string>>;

  constructor(size: number, hooks: WorkerPoolHooks, env: Readonly<Record<string, string>> = {}) {
    this.size = size;
    this.#hooks = hooks;
    this.#env = env;
    cluster.on('message', (worker: Worker, message: unknown) => {
      if (!isPortariaMessage<WorkerMessage>(message)) return;
      if (message.portaria === 'answer') this.#pending.answer(message.id, message.value);
      else if (message.portaria === 'listening') this.#onListening(worker, message.publicUrl);
      else this.#hooks.message(worker, message);
    });
    cluster.on('exit', (worker: Worker, code: number | null, signal: string | null) =>
      this.#onExit(worker, code, signal),
    );
  }

  /** Forks every worker; resolves with the public URL once all of them listen. */
  start(): Promise<string> {
    // Read by node:cluster at the first fork, and fixed from then on.
    cluster.schedulingPolicy = cluster.SCHED_NONE;
    const started = new Promise<string>((resolve, reject) => {
      this.#startup = { resolve, reject };
    });
    for (let i = 0; i < this.size; i++) this.#fork();
    return started;
  }

  /** Workers listening now. */
  get listening(): number {
    return this.#listening.size;
  }

  /** Workers that get revocations from now on (the caller sends them the list first). */
  register(worker: Worker): void {
    if (worker.isConnected()) this.#registered.add(worker);
  }

  /** Workers listening now: each answers questions (metrics, readiness). */
  listeningWorkers(): Worker[] {
    return [...this.#listening];
  }

  /** Workers registered now: each has the revocation list. */
  registered(): Worker[] {
    return [...this.#registered];
  }

  send(worker: Worker, message: PrimaryMessage): void {
    if (!worker.isConnected()) return;
    try {
      worker.send(message);
    } catch {
      // Its channel closed meanwhile: the exit handler replaces it.
    }
  }

  broadcast(message: PrimaryMessage): void {
    for (const worker of this.#registered) this.send(worker, message);
  }

  /** Asks `worker`; resolves with the answer, or `undefined` if none came within `timeoutMs`. */
  ask(
    worker: Worker,
    message: (id: number) => PrimaryMessage,
    timeoutMs: number,
  ): Promise<unknown> {
    if (!worker.isConnected()) return Promise.resolve(undefined);
    // A worker that dies meanwhile answers nothing: settled when its channel closes, not
    // after the whole timeout.
    let asked = 0;
    const gone = () => this.#pending.answer(asked, undefined);
    worker.once('disconnect', gone);
    return this.#pending
      .ask((id) => {
        asked = id;
        this.send(worker, message(id));
      }, timeoutMs)
      .finally(() => worker.off('disconnect', gone));
  }

  /**
   * Stops replacing workers, tells each to drain, and resolves once every one exited
   * and its channel closed (its last log lines read); one still running after `graceMs`
   * is killed.
   */
  async stop(graceMs: number): Promise<void> {
    this.#stopping = true;
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => !!w);
    // A listening worker drains; one still starting has no handler for the message yet,
    // and its stop signal ends it at once (main.ts: nothing to drain before listening).
    for (const worker of workers) {
      if (this.#listening.has(worker)) this.send(worker, { portaria: 'shutdown' });
      else if (!worker.isDead()) worker.process.kill('SIGTERM');
    }
    const kill = setTimeout(() => {
      for (const worker of workers) if (!worker.isDead()) worker.process.kill('SIGKILL');
    }, graceMs);
    await Promise.all(workers.map((worker) => this.#gone.get(worker)));
    clearTimeout(kill);
  }

  /** Kills `worker` at once (it can no longer be trusted to enforce revocations). */
  kill(worker: Worker): void {
    this.#registered.delete(worker);
    if (!worker.isDead()) worker.process.kill('SIGKILL');
  }

  #fork(): void {
    const worker = cluster.fork(this.#env);
    this.#startedAt.set(worker, Date.now());
    // A write to a worker that died and whose exit is not seen yet fails (EPIPE) as an
    // `error` event on the worker: without a listener it would end the primary. The exit
    // handler replaces the worker.
    worker.on('error', () => {});
    const disconnected = new Promise<void>((resolve) => worker.once('disconnect', () => resolve()));
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    this.#gone.set(
      worker,
      exited.then(async () => {
        const closeWait = new AbortController();
        await Promise.race([
          disconnected,
          delay(CHANNEL_CLOSE_MS, undefined, { signal: closeWait.signal }),
        ]);
        closeWait.abort();
      }),
    );
    worker.once('online', () => this.#hooks.started(worker.id, worker.process.pid));
  }

  #onListening(worker: Worker, publicUrl: string): void {
    this.#listening.add(worker);
    this.#publicUrl ||= publicUrl;
    if (this.#startup !== null && this.#listening.size === this.size) {
      this.#startup.resolve(this.#publicUrl);
      this.#startup = null;
    }
  }

  #onExit(worker: Worker, code: number | null, signal: string | null): void {
    this.#registered.delete(worker);
    this.#listening.delete(worker);
    const startedAt = this.#startedAt.get(worker) ?? 0;
    this.#startedAt.delete(worker);
    void this.#gone.get(worker)?.then(() => this.#gone.delete(worker));
    if (this.#stopping) return;
    const exit = { workerId: worker.id, pid: worker.process.pid, code, signal };
    if (this.#startup !== null) {
      this.#stopping = true;
      this.#startup.reject(
        new Error(`worker ${worker.id} exited while starting (code ${code}, signal ${signal})`),
      );
      this.#startup = null;
      return;
    }
    this.#earlyExits = Date.now() - startedAt < EARLY_EXIT_MS ? this.#earlyExits + 1 : 0;
    const delayMs =
      this.#earlyExits === 0
        ? 0
        : Math.min(MAX_RESPAWN_DELAY_MS, 100 * 2 ** (this.#earlyExits - 1));
    this.#hooks.replaced(exit, delayMs);
    setTimeout(() => {
      if (!this.#stopping) this.#fork();
    }, delayMs).unref();
  }
}

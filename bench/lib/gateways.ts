/**
 * Starting the bench's servers as child processes: the upstream, the baseline, and any
 * number of gateways, each logging (as in production) to its own named pipe read by its
 * own log sink. Every child runs on `process.execPath`, the Node that runs the bench.
 */
import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Child, spawnChild } from './spawnChild.js';

export interface ServerInfo {
  readonly url: string;
}
export interface GatewayInfo extends ServerInfo {
  readonly adminUrl: string;
  /** The decision listener (`mode: authorizer` or `both`), else ''. */
  readonly authorizerUrl: string;
  /** The gRPC decision listener (`grpc://host:port`), else ''. */
  readonly grpcUrl: string;
  readonly token: string;
  readonly logFile: string;
}

export const benchChild = (name: string) => new URL(`../${name}.js`, import.meta.url);

/** Children started so far, stopped together (last first) by `stopAll`. */
export class ChildSet {
  readonly #children: Child<unknown>[] = [];

  add<T>(child: Child<T>): Child<T> {
    this.#children.push(child as Child<unknown>);
    return child;
  }

  /** The pids of the children started so far. */
  pids(): number[] {
    return this.#children.flatMap((c) => (c.pid === undefined ? [] : [c.pid]));
  }

  async stopAll(): Promise<void> {
    for (const c of this.#children.reverse()) await c.stop().catch(() => undefined);
    this.#children.length = 0;
  }
}

export async function startUpstream(children: ChildSet): Promise<Child<ServerInfo>> {
  return children.add(await spawnChild<ServerInfo>('upstream', benchChild('upstream'), []));
}

export async function startBaseline(
  children: ChildSet,
  upstream: string,
): Promise<Child<ServerInfo>> {
  return children.add(await spawnChild<ServerInfo>('baseline', benchChild('baseline'), [upstream]));
}

export interface GatewayOptions {
  readonly name: string;
  /** A fresh work directory for this gateway. */
  readonly dir: string;
  readonly upstream: string;
  readonly keysDir?: string;
  /** Merged over the bench gateway's settings (see gateway.ts). */
  readonly overrides?: Record<string, unknown>;
  readonly nodeArgs?: readonly string[];
  readonly readyTimeoutMs?: number;
}

/** A gateway (`gateway.js`) logging to a named pipe read by its own log sink. */
export async function startGateway(
  children: ChildSet,
  options: GatewayOptions,
): Promise<Child<GatewayInfo>> {
  const fifo = `${options.dir}.log.fifo`;
  const made = spawnSync('mkfifo', ['-m', '600', fifo], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`mkfifo failed: ${made.stderr}`);
  children.add(await spawnChild(`${options.name} log sink`, benchChild('logSink'), [fifo]));
  const args = [options.upstream, '--dir', options.dir, '--log-to', fifo];
  if (options.keysDir !== undefined) args.push('--keys-dir', options.keysDir);
  if (options.overrides !== undefined) {
    const file = `${options.dir}.overrides.json`;
    await writeFile(file, JSON.stringify(options.overrides));
    args.push('--overrides', file);
  }
  return children.add(
    await spawnChild<GatewayInfo>(
      options.name,
      benchChild('gateway'),
      args,
      options.nodeArgs ?? [],
      options.readyTimeoutMs,
    ),
  );
}

/** Throws unless `url` answers 200 to a GET with `headers`. */
export async function expectOk(url: string, headers: Record<string, string> = {}): Promise<void> {
  const res = await fetch(url, { headers });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
}

/** `portaria_verify_cache_lookups_total` by result, from the admin listener. */
export async function cacheLookups(adminUrl: string): Promise<{ hit: number; miss: number }> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const read = (result: string) =>
    Number(
      new RegExp(`^portaria_verify_cache_lookups_total\\{result="${result}"\\} (\\S+)$`, 'm').exec(
        text,
      )?.[1] ?? 0,
    );
  return { hit: read('hit'), miss: read('miss') };
}

export const joinDir = join;

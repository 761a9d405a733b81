/**
 * The TCP sockets one process holds open, read from Linux's /proc: its descriptors that
 * are sockets (`/proc/<pid>/fd/*` → `socket:[inode]`), matched by inode against the
 * connection tables of its network namespace (`/proc/<pid>/net/tcp` and `tcp6`).
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** Kernel TCP states as /proc/net/tcp writes them (include/net/tcp_states.h). */
const STATES: Readonly<Record<string, string>> = {
  '01': 'ESTABLISHED',
  '02': 'SYN_SENT',
  '03': 'SYN_RECV',
  '04': 'FIN_WAIT1',
  '05': 'FIN_WAIT2',
  '06': 'TIME_WAIT',
  '07': 'CLOSE',
  '08': 'CLOSE_WAIT',
  '09': 'LAST_ACK',
  '0A': 'LISTEN',
  '0B': 'CLOSING',
};

export interface TcpSocket {
  readonly localPort: number;
  readonly remotePort: number;
  readonly state: string;
}

export function tcpSocketsOf(pid: number): TcpSocket[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let target: string;
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue; // closed meanwhile
    }
    const match = /^socket:\[(\d+)\]$/.exec(target);
    if (match?.[1] !== undefined) inodes.add(match[1]);
  }
  const sockets: TcpSocket[] = [];
  for (const table of ['tcp', 'tcp6']) {
    const lines = readFileSync(`/proc/${pid}/net/${table}`, 'utf8').split('\n').slice(1);
    for (const line of lines) {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      const fields = line.trim().split(/\s+/);
      const [, local, remote, state, , , , , , inode] = fields;
      if (inode === undefined || !inodes.has(inode)) continue;
      sockets.push({
        localPort: portOf(local),
        remotePort: portOf(remote),
        state: STATES[state ?? ''] ?? `state ${state}`,
      });
    }
  }
  return sockets;
}

function portOf(address: string | undefined): number {
  return Number.parseInt(address?.split(':')[1] ?? '0', 16);
}

/**
 * The variables Kubernetes sets in every pod for every Service of the namespace while
 * `enableServiceLinks` is on (its default). A Service `portaria-prod` with a port `http`
 * 80 on 10.96.0.12 gives `PORTARIA_PROD_SERVICE_HOST=10.96.0.12`,
 * `PORTARIA_PROD_SERVICE_PORT=80`, `PORTARIA_PROD_SERVICE_PORT_HTTP=80`,
 * `PORTARIA_PROD_PORT=tcp://10.96.0.12:80`, and for each port
 * `PORTARIA_PROD_PORT_80_TCP=tcp://10.96.0.12:80` with its `_PROTO`, `_PORT` and `_ADDR`.
 * A Service named `portaria` or `portaria-…` puts them in our `PORTARIA_` namespace; they
 * are never settings, and a start must not stop on them.
 *
 * A variable is taken for one when both its name and its value have the shape Kubernetes
 * gives them: the name is `N_<suffix>` for a possible Service name N (a DNS-1035 label,
 * upper-cased, `-` as `_`) and the value is the address, port number, protocol or
 * `proto://address:port` that suffix carries, consistent with the name's own port and
 * protocol. A misspelt setting (`PORTARIA_SERVER_PORT=8443`) has neither.
 */
import { isIP } from 'node:net';

/** A Service name as Kubernetes writes it in a variable: a DNS-1035 label, `-` as `_`. */
const SERVICE = '[A-Z](?:[A-Z0-9_]{0,61}[A-Z0-9])?';
/** A port name (IANA service name: letters, digits, inner hyphens) as written. */
const PORT_NAME = '[A-Z0-9](?:[A-Z0-9_]{0,13}[A-Z0-9])?';
const PROTOCOL = '(TCP|UDP|SCTP)';

const HOST = new RegExp(`^${SERVICE}_SERVICE_HOST$`);
const SERVICE_PORT = new RegExp(`^${SERVICE}_SERVICE_PORT(?:_${PORT_NAME})?$`);
const FIRST_PORT = new RegExp(`^${SERVICE}_PORT$`);
const PORT_LINK = new RegExp(`^${SERVICE}_PORT_([0-9]+)_${PROTOCOL}(?:_(PROTO|PORT|ADDR))?$`);
/** `tcp://10.96.0.12:80`, `tcp://[fd00::12]:80` (Go's net.JoinHostPort). */
const LINK_URL = /^(tcp|udp|sctp):\/\/(?:\[([0-9A-Fa-f:.]+)\]|([0-9.]+)):([0-9]+)$/;

/** True when `name=value` is a variable Kubernetes sets for a Service. */
export function isServiceLink(name: string, value: string): boolean {
  if (HOST.test(name)) return isIP(value) !== 0;
  if (SERVICE_PORT.test(name)) return isPortNumber(value);
  const link = PORT_LINK.exec(name);
  if (link !== null) {
    const [, port = '', protocol = '', part] = link;
    if (!isPortNumber(port)) return false;
    if (part === 'PROTO') return value === protocol.toLowerCase();
    if (part === 'PORT') return value === port;
    if (part === 'ADDR') return isIP(value) !== 0;
    return isLinkUrl(value, protocol.toLowerCase(), port);
  }
  // `N_PORT` is the first port's address: the one form whose name a setting's short alias
  // took (PORTARIA_PORT), told apart by its value.
  if (FIRST_PORT.test(name)) return isLinkUrl(value, undefined, undefined);
  return false;
}

/** A `proto://address:port` value, of the given protocol and port when they are known. */
export function isLinkUrl(value: string, protocol?: string, port?: string): boolean {
  const url = LINK_URL.exec(value);
  if (url === null) return false;
  const [, scheme, v6, v4, number = ''] = url;
  const address = v6 ?? v4 ?? '';
  const family = isIP(address);
  if (family === 0 || (v6 !== undefined) !== (family === 6)) return false;
  if (!isPortNumber(number)) return false;
  return (protocol === undefined || scheme === protocol) && (port === undefined || number === port);
}

function isPortNumber(text: string): boolean {
  return /^[1-9][0-9]{0,4}$/.test(text) && Number(text) <= 65535;
}

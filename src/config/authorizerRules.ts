/**
 * `mode` and `authorizer`: a gateway that answers decisions must know whom it answers
 * (the original request's method, URI and certificate come in headers or a gRPC message,
 * trusted only from `server.trustedProxies`), listens on ports of its own, and forwards
 * nothing in `authorizer` mode, so routes need no upstream there and need one elsewhere.
 */
import { type Loose, mappings, section, strings, text } from './looseValues.js';

export function authorizerProblems(config: Loose): string[] {
  const problems: string[] = [];
  const mode = text(config.mode) ?? 'proxy';
  const forwards = mode !== 'authorizer';
  for (const [i, route] of mappings(config.routes)) {
    if (forwards && text(route.upstream) === null) {
      problems.push(`routes[${i}].upstream: required (only mode: authorizer forwards nothing)`);
    }
  }
  const fallback = section(config.upstream).default;
  if (forwards && fallback !== null && typeof fallback === 'object') {
    if (text(section(fallback).upstream) === null) {
      problems.push('upstream.default.upstream: required (only mode: authorizer forwards nothing)');
    }
  }
  if (mode === 'proxy') return problems;
  if (strings(section(config.server).trustedProxies).length === 0) {
    problems.push(
      `server.trustedProxies: mode: ${mode} needs the addresses of the proxies that ask for decisions (they alone may say what the original request was)`,
    );
  }
  const authorizer = section(config.authorizer);
  const ports = new Map<number, string>();
  for (const [setting, value] of [
    ['server.port', section(config.server).port ?? 8080],
    ['admin.port', section(config.admin).port ?? 9091],
    ['authorizer.port', authorizer.port ?? 8181],
    [
      'authorizer.grpc.port',
      section(authorizer.grpc).enabled === false ? 0 : (section(authorizer.grpc).port ?? 9191),
    ],
  ] as const) {
    if (typeof value !== 'number' || value === 0) continue;
    const taken = ports.get(value);
    if (taken !== undefined) problems.push(`${setting}: must differ from ${taken} (${value})`);
    else ports.set(value, setting);
  }
  const method = text(authorizer.originalMethodHeader);
  if (
    method !== null &&
    method.toLowerCase() === text(authorizer.originalUriHeader)?.toLowerCase()
  ) {
    problems.push('authorizer.originalUriHeader: must differ from authorizer.originalMethodHeader');
  }
  return problems;
}

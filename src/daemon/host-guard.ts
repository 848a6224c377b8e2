import type { IncomingHttpHeaders } from 'node:http';
import { ContractError } from '../contract/errors.js';

/** The names a loopback listener answers to; any other Host is a page that rebound its own name to 127.0.0.1. */
const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'] as const;

/** How much of a refused Host or Origin a refusal quotes back. */
const QUOTED = 100;

/** `Host` values this listener answers to: each loopback name with its bound port (bare on port 80). */
export function loopbackHosts(port: number): ReadonlySet<string> {
  const hosts = new Set<string>();
  for (const name of LOOPBACK_NAMES) {
    hosts.add(`${name}:${port}`);
    if (port === 80) hosts.add(name);
  }
  return hosts;
}

function refusal(field: 'host' | 'origin', value: string | undefined, hosts: ReadonlySet<string>): ContractError {
  const shown = value === undefined ? 'none' : JSON.stringify(value.slice(0, QUOTED));
  const expected = [...hosts].filter((host) => host.includes(':')).join(', ');
  return new ContractError(
    'AUTHORITY_REQUIRED',
    `${field === 'host' ? 'Host' : 'Origin'} ${shown} is not this daemon's loopback address (${expected}); ` +
      'requests naming another host are refused, whatever they carry, so a web page cannot rebind its name here',
    { transport: 'tcp', field, ...(value === undefined ? {} : { [field]: value.slice(0, QUOTED) }) },
  );
}

/**
 * The refusal of a TCP request whose `Host` is not a loopback name with the bound port, or whose `Origin`
 * (when sent) is not `http://` and such a host; undefined when both are this daemon's own.
 *
 * @example
 * ```ts
 * foreignRequest({ host: 'evil.example:8790' }, loopbackHosts(8790)); // AUTHORITY_REQUIRED (403), field host
 * foreignRequest({ host: 'localhost:8790', origin: 'http://localhost:8790' }, loopbackHosts(8790)); // undefined
 * ```
 */
export function foreignRequest(headers: IncomingHttpHeaders, hosts: ReadonlySet<string>): ContractError | undefined {
  const host = headers.host;
  if (host === undefined || !hosts.has(host.toLowerCase())) return refusal('host', host, hosts);
  const origin = headers.origin;
  if (origin === undefined) return undefined;
  const match = /^http:\/\/([^/]+)$/i.exec(origin);
  if (match === null || !hosts.has(match[1]!.toLowerCase())) return refusal('origin', origin, hosts);
  return undefined;
}

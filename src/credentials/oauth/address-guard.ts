// Keeps OAuth requests a server named off the user's own network: an address is checked before connecting, and again where the name resolved at connect time.

import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions, type LookupOneOptions } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { ADDRESS_CLASS_NAMES, addressClassOf, type AddressClass } from '../../core/address-class.js';
import { BridgeError } from '../../core/errors.js';
import { isLoopbackHost, isServerLoopbackHost } from '../../core/hosts.js';

/** The option that lets an operator use an authorization server on a private network on purpose. */
export const ALLOW_PRIVATE_NETWORK_OPTION = '--oauth-allow-private-network';

/** An OAuth request refused for the address it would reach; carries the class and the option in its message. */
export class RefusedAddressError extends BridgeError {}

type Resolve = (host: string) => Promise<readonly LookupAddress[]>;

const resolveAll: Resolve = (host) =>
  new Promise((resolve, reject) => dnsLookup(host, { all: true, verbatim: true }, (error, addresses) => (error === null ? resolve(addresses) : reject(error))));

export interface AddressGuard {
  /** Refuses a URL whose host is an IP address in a class the rule refuses, naming it after `subject`; a name is checked where it resolves. */
  checkUrl(url: URL, subject?: string): Promise<void>;
  /**
   * Refuses a sign-in page (the authorization endpoint, opened in the user's browser) whose host is
   * an IP address, or `localhost` or a `*.localhost` name (browsers keep those on this machine), in
   * a class the rule refuses. Another name is left to the browser, which resolves it with its own
   * resolver: an answer of the bridge's would prove nothing about where the browser goes.
   */
  checkPage(url: URL): Promise<void>;
  /** A resolver for the OAuth dispatcher: the name's addresses, each checked, at connect time (DNS rebinding). */
  lookup: LookupFunction;
}

/**
 * The rule (RFC 9728 §7.7, RFC 8414 §6: metadata a server publishes must not make the client reach
 * what the server could not): a public address always passes; a cloud metadata service's never; a
 * loopback, private, link-local or unique-local one only when the MCP server itself is in that
 * same class (a server on 10.x with its IdP on 10.x, both on loopback: an ordinary deployment), and
 * has no public address, or with --oauth-allow-private-network.
 */
export function createAddressGuard(server: URL, allowPrivateNetwork: boolean, resolve: Resolve = resolveAll): AddressGuard {
  let serverClasses: Promise<Set<AddressClass>> | undefined;
  const classesOfServer = () =>
    (serverClasses ??= (async () => {
      const literal = addressClassOf(server.hostname);
      if (literal !== undefined) return new Set([literal]);
      if (isServerLoopbackHost(server.hostname)) return new Set<AddressClass>(['loopback']);
      const addresses = await resolve(server.hostname).catch(() => []);
      const classes = new Set(addresses.map((address) => addressClassOf(address.address) ?? 'public'));
      // A server's name is in the hands of whoever runs its DNS: one that also resolves to a public
      // address is a public server that published a private address beside it, and earns nothing.
      return classes.has('public') ? new Set<AddressClass>() : classes;
    })());

  const refusal = async (
    host: string,
    address: string,
    subject = 'an OAuth request to',
    kind: AddressClass = addressClassOf(address) ?? 'public',
  ): Promise<RefusedAddressError | undefined> => {
    if (kind === 'public') return undefined;
    if (kind !== 'cloud-metadata' && (allowPrivateNetwork || (await classesOfServer()).has(kind))) return undefined;
    const named = host === address ? address : `${host} (${address})`;
    return new RefusedAddressError(
      'AUTH_REQUIRED',
      kind === 'cloud-metadata'
        ? `refused ${subject} ${named}: it is ${ADDRESS_CLASS_NAMES[kind]}, which no OAuth request may reach`
        : `refused ${subject} ${named}: it is ${ADDRESS_CLASS_NAMES[kind]}, and the MCP server is not on one; ${ALLOW_PRIVATE_NETWORK_OPTION} allows it`,
      {
        hint:
          kind === 'cloud-metadata'
            ? 'the server or its authorization server names an address that hands out cloud credentials; contact its operator'
            : `if your authorization server really is on this network, pass ${ALLOW_PRIVATE_NETWORK_OPTION}; otherwise the server is pointing the bridge at your own network`,
      },
    );
  };

  const lookup = ((host: string, options: LookupOneOptions | LookupAllOptions | number, callback: (...args: unknown[]) => void) => {
    const all = typeof options === 'object' && options.all === true;
    resolve(host).then(
      async (addresses) => {
        for (const { address } of addresses) {
          const refused = await refusal(host, address);
          if (refused !== undefined) return callback(refused);
        }
        if (addresses.length === 0) return callback(Object.assign(new Error(`${host} resolved to no address`), { code: 'ENOTFOUND' }));
        return all ? callback(null, addresses) : callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (error: unknown) => callback(error),
    );
  }) as LookupFunction;

  return {
    async checkUrl(url, subject) {
      const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
      if (addressClassOf(host) === undefined) return;
      const refused = await refusal(host, host, subject);
      if (refused !== undefined) throw refused;
    },
    async checkPage(url) {
      const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
      const kind = addressClassOf(host) ?? (isLoopbackHost(host) ? 'loopback' : undefined);
      if (kind === undefined) return;
      const refused = await refusal(host, host, 'to open the sign-in page (authorization_endpoint) at', kind);
      if (refused !== undefined) throw refused;
    },
    lookup,
  };
}

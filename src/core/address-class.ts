// Which part of the network an IP address belongs to: the public internet, this machine, the local network, or a cloud's metadata service.

import { isIP } from 'node:net';

/**
 * The classes an OAuth request must not reach because a server named them (RFC 9728 §7.7 and
 * RFC 8414 §6: a client fetching what a server names must not be turned into a probe of the
 * user's own network). From the IANA special-purpose registries (RFC 6890): loopback (127/8, ::1),
 * private (10/8, 172.16/12, 192.168/16, and 100.64/10 shared address space, RFC 6598), link-local
 * (169.254/16, RFC 3927; fe80::/10), unique-local (fc00::/7, RFC 4193), unspecified (0.0.0.0/8,
 * ::), other reserved ranges (multicast, 240/4, documentation, IPv6 discard-only), IPv6
 * site-local (fec0::/10, counted as private); and cloud metadata services, which hand out
 * credentials to whatever asks.
 */
export type AddressClass = 'public' | 'loopback' | 'private' | 'link-local' | 'unique-local' | 'unspecified' | 'reserved' | 'cloud-metadata';

/**
 * Instance metadata services: AWS, GCP and Azure (169.254.169.254), AWS ECS (169.254.170.2),
 * Alibaba (100.100.100.200), Azure's WireServer (168.63.129.16: a public address, but every Azure
 * VM reaches its host's platform service there), AWS over IPv6.
 */
export const CLOUD_METADATA_ADDRESSES: readonly string[] = ['169.254.169.254', '169.254.170.2', '100.100.100.200', '168.63.129.16', 'fd00:ec2::254'];

/** How a message names a class. */
export const ADDRESS_CLASS_NAMES: Readonly<Record<AddressClass, string>> = {
  public: 'a public address',
  loopback: 'a loopback address (this machine)',
  private: 'a private network address',
  'link-local': 'a link-local address',
  'unique-local': 'a unique-local IPv6 address (a private network)',
  unspecified: 'an unspecified address',
  reserved: 'a reserved address',
  'cloud-metadata': "a cloud metadata service's address",
};

/** The class of an IP address (v4 or v6, as a URL's host or a resolver gives it, brackets allowed); undefined for a name. */
export function addressClassOf(address: string): AddressClass | undefined {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const family = isIP(bare);
  if (family === 4) return ipv4Class(bare.split('.').map(Number));
  if (family === 6) return ipv6Class(ipv6Words(bare));
  return undefined;
}

function ipv4Class([a, b, c, d]: number[]): AddressClass {
  const text = `${a}.${b}.${c}.${d}`;
  if (CLOUD_METADATA_ADDRESSES.includes(text)) return 'cloud-metadata';
  if (a === 127) return 'loopback';
  if (a === 0) return 'unspecified';
  if (a === 10 || (a === 172 && b! >= 16 && b! <= 31) || (a === 192 && b === 168) || (a === 100 && b! >= 64 && b! <= 127)) return 'private';
  if (a === 169 && b === 254) return 'link-local';
  // Multicast and the old class E (RFC 5771, RFC 1112), the benchmarking and documentation ranges, broadcast.
  if (
    a! >= 224 ||
    (a === 198 && (b === 18 || b === 19)) ||
    (a === 192 && b === 0 && (c === 0 || c === 2)) ||
    (a === 198 && b === 51 && c === 100) ||
    (a === 203 && b === 0 && c === 113)
  )
    return 'reserved';
  return 'public';
}

/** The eight 16-bit words of an IPv6 address (an embedded IPv4 tail included). */
function ipv6Words(text: string): number[] {
  let address = text.toLowerCase().split('%')[0]!;
  const tail = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(address);
  if (tail !== null) {
    const [, a, b, c, d] = tail.map(Number);
    address = `${address.slice(0, tail.index)}${((a! << 8) | b!).toString(16)}:${((c! << 8) | d!).toString(16)}`;
  }
  const [head, rest] = address.includes('::') ? address.split('::') : [address, undefined];
  const front = head === '' ? [] : head.split(':');
  const back = rest === undefined || rest === '' ? [] : rest.split(':');
  const fill = rest === undefined ? [] : Array<string>(8 - front.length - back.length).fill('0');
  return [...front, ...fill, ...back].map((word) => Number.parseInt(word, 16));
}

function ipv6Class(words: number[]): AddressClass {
  const v4 = (high: number, low: number) => [high >> 8, high & 0xff, low >> 8, low & 0xff];
  const zeros = (count: number) => words.slice(0, count).every((word) => word === 0);
  const embedded = () => ipv4Class(v4(words[6]!, words[7]!));
  // IPv4-mapped (::ffff:a.b.c.d, RFC 4291 §2.5.5.2), IPv4-translated (::ffff:0:a.b.c.d, RFC 2765
  // §2.1), IPv4-compatible (::a.b.c.d) and NAT64 (64:ff9b::/96, RFC 6052): the IPv4 address
  // inside is where the packets go.
  if (zeros(5) && words[5] === 0xffff) return embedded();
  if (zeros(4) && words[4] === 0xffff && words[5] === 0) return embedded();
  if (zeros(6) && (words[6] !== 0 || words[7]! > 1)) return embedded();
  if (words[0] === 0x64 && words[1] === 0xff9b && words.slice(2, 6).every((word) => word === 0)) return embedded();
  // Local-use NAT64 (64:ff9b:1::/48, RFC 8215): not globally reachable. An operator's prefix in it
  // may be /48, /56, /64 or /96, each placing the IPv4 address elsewhere (RFC 6052 §2.2): a metadata
  // address in any of those places is one; 64:ff9b:1::/96 is classed by its IPv4 address as the
  // well-known prefix is; the rest is reserved.
  if (words[0] === 0x64 && words[1] === 0xff9b && words[2] === 1) {
    const bytes = words.flatMap((word) => [word >> 8, word & 0xff]);
    const at = (prefixBits: number) => bytes.filter((_, index) => index >= prefixBits / 8 && index !== 8).slice(0, 4);
    if ([48, 56, 64, 96].some((prefixBits) => ipv4Class(at(prefixBits)) === 'cloud-metadata')) return 'cloud-metadata';
    return words.slice(3, 6).every((word) => word === 0) ? embedded() : 'reserved';
  }
  if (words.join(':') === [0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254].join(':')) return 'cloud-metadata';
  // 6to4 (2002::/16, RFC 3056 §2): the relay delivers to the IPv4 address in words 1 and 2, so it
  // is classed as that address is (2002:a9fe:a9fe:: is the metadata service).
  if (words[0] === 0x2002) return ipv4Class(v4(words[1]!, words[2]!));
  // Teredo (2001::/32, RFC 4380 §4): the client's IPv4 address, inverted, in the last two words. A
  // tunnel no server needs to name; a non-public address inside (a metadata service, a private
  // host) keeps its class, the rest is reserved.
  if (words[0] === 0x2001 && words[1] === 0) {
    const inner = ipv4Class(v4(words[6]! ^ 0xffff, words[7]! ^ 0xffff));
    return inner === 'public' ? 'reserved' : inner;
  }
  if (zeros(7) && words[7] === 1) return 'loopback';
  if (zeros(8)) return 'unspecified';
  if ((words[0]! & 0xfe00) === 0xfc00) return 'unique-local';
  if ((words[0]! & 0xffc0) === 0xfe80) return 'link-local';
  // Site-local (fec0::/10, RFC 3879 deprecated it, RFC 4291 §2.5.7): where still used, a private network.
  if ((words[0]! & 0xffc0) === 0xfec0) return 'private';
  // Multicast (RFC 4291 §2.7), discard-only (100::/64, RFC 6666), documentation (2001:db8::/32, RFC 3849).
  if ((words[0]! & 0xff00) === 0xff00 || (words[0] === 0x100 && words.slice(1, 4).every((word) => word === 0)) || (words[0] === 0x2001 && words[1] === 0xdb8))
    return 'reserved';
  return 'public';
}

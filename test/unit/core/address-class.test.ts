import { describe, expect, it } from 'vitest';
import { addressClassOf } from '../../../src/core/address-class.js';

describe('addressClassOf', () => {
  it.each([
    ['169.254.169.254', 'cloud-metadata'],
    ['169.254.170.2', 'cloud-metadata'],
    ['100.100.100.200', 'cloud-metadata'],
    ['fd00:ec2::254', 'cloud-metadata'],
    ['::ffff:169.254.169.254', 'cloud-metadata'],
    ['::ffff:a9fe:a9fe', 'cloud-metadata'],
    ['64:ff9b::a9fe:a9fe', 'cloud-metadata'],
    ['[::ffff:a9fe:a9fe]', 'cloud-metadata'],
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.254', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['::ffff:10.0.0.1', 'private'],
    ['169.254.1.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fd00::1', 'unique-local'],
    ['fc00::1', 'unique-local'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['224.0.0.1', 'reserved'],
    ['255.255.255.255', 'reserved'],
    ['ff02::1', 'reserved'],
    ['8.8.8.8', 'public'],
    ['172.32.0.1', 'public'],
    ['2001:4860:4860::8888', 'public'],
  ])('%s is %s', (address, kind) => {
    expect(addressClassOf(address)).toBe(kind);
  });

  it('classes the odd spellings the URL parser turns into addresses, and no name', () => {
    for (const [url, kind] of [
      ['http://0x7f.1/', 'loopback'],
      ['http://2130706433/', 'loopback'],
      ['http://0251.0376.0251.0376/', 'cloud-metadata'],
      ['http://[::ffff:127.0.0.1]/', 'loopback'],
      ['https://[::ffff:169.254.169.254]/', 'cloud-metadata'],
    ] as const)
      expect(addressClassOf(new URL(url).hostname), url).toBe(kind);
    expect(addressClassOf('metadata.google.internal')).toBeUndefined();
  });

  it('classes the IPv4-translated, local-use NAT64, site-local, discard and documentation IPv6 ranges as never public', () => {
    for (const [address, kind] of [
      // IPv4-translated (::ffff:0:0/96, RFC 2765 §2.1): the IPv4 address inside is where a translator sends it.
      ['::ffff:0:a9fe:a9fe', 'cloud-metadata'],
      ['::ffff:0:10.0.0.1', 'private'],
      ['::ffff:0:7f00:1', 'loopback'],
      // Local-use NAT64 (64:ff9b:1::/48, RFC 8215): the IPv4 address where a /96, /64, /56 or /48 prefix puts it (RFC 6052 §2.2).
      ['64:ff9b:1::a9fe:a9fe', 'cloud-metadata'],
      ['64:ff9b:1:ab:cd:ef01:a9fe:a9fe', 'cloud-metadata'],
      ['64:ff9b:1:ab:a9:fea9:fe00:0', 'cloud-metadata'],
      ['64:ff9b:1:a9:fe:a9fe::', 'cloud-metadata'],
      ['64:ff9b:1:a9fe:a9:fe00::', 'cloud-metadata'],
      ['64:ff9b:1::7f00:1', 'loopback'],
      ['64:ff9b:1::808:808', 'public'],
      ['64:ff9b:1:ab::1', 'reserved'],
      // Site-local (fec0::/10, RFC 3879: deprecated, still a private network where it is used).
      ['fec0::1', 'private'],
      ['feff::1', 'private'],
      ['100::1', 'reserved'],
      ['2001:db8::1', 'reserved'],
    ] as const)
      expect(addressClassOf(address), address).toBe(kind);
  });

  it("classes Azure's WireServer as a metadata service, 6to4 by the IPv4 address inside, and Teredo as never public", () => {
    for (const [address, kind] of [
      ['168.63.129.16', 'cloud-metadata'],
      ['::ffff:168.63.129.16', 'cloud-metadata'],
      // 6to4 (2002::/16, RFC 3056 §2): the IPv4 address in the second and third words.
      ['2002:a9fe:a9fe::1', 'cloud-metadata'],
      ['2002:a00:1::', 'private'],
      ['2002:7f00:1::', 'loopback'],
      ['2002:808:808::1', 'public'],
      // Teredo (2001::/32, RFC 4380 §4): the client's IPv4 address, inverted, in the last two words.
      ['2001:0:4136:e378:8000:63bf:5601:5601', 'cloud-metadata'],
      ['2001:0:4136:e378:8000:63bf:f5ff:fffe', 'private'],
      ['2001:0:4136:e378:8000:63bf:f7f7:f7f7', 'reserved'],
      ['2001:4860::1', 'public'],
    ] as const)
      expect(addressClassOf(address), address).toBe(kind);
  });
});

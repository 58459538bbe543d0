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
});

// Which hosts are this machine: the user's own --url may name it by any loopback spelling.

import { describe, expect, it } from 'vitest';
import { isLoopbackHost } from '../../../src/core/hosts.js';

describe('isLoopbackHost', () => {
  it.each([
    ['localhost', true],
    ['127.0.0.1', true],
    ['127.9.9.9', true],
    ['[::1]', true],
    ['api.localhost', true],
    ['10.0.0.1', false],
    ['example.com', false],
    ['127.0.0.1.example.com', false],
  ])('%s → %s', (host, expected) => {
    expect(isLoopbackHost(host)).toBe(expected);
  });
});

// The endpoint an HTTP+SSE server names: resolved against the stream URL, and refused unless it is on the stream's own origin.

import { describe, expect, it } from 'vitest';
import { MAX_ENDPOINT_EVENT_BYTES, messageEndpointOf } from '../../../src/transports/http-sse-endpoint.js';

const stream = new URL('https://mcp.example.com:8443/v1/sse?tenant=a');

describe('messageEndpointOf', () => {
  it('resolves a path, a relative reference and an absolute URL of the same origin (RFC 3986 §5.2)', () => {
    expect(messageEndpointOf('/messages?sessionId=abc', stream).href).toBe('https://mcp.example.com:8443/messages?sessionId=abc');
    expect(messageEndpointOf('messages?sessionId=abc', stream).href).toBe('https://mcp.example.com:8443/v1/messages?sessionId=abc');
    expect(messageEndpointOf(' https://mcp.example.com:8443/m#frag \n', stream).href).toBe('https://mcp.example.com:8443/m');
  });

  it.each([
    ['another host', 'https://evil.example/messages', /another origin \(https:\/\/evil\.example\)/],
    ['another port', 'https://mcp.example.com:9443/messages', /another origin/],
    ['another scheme', 'http://mcp.example.com:8443/messages', /another origin/],
    ['a scheme-relative host', '//evil.example/messages', /another origin/],
    ['javascript:', 'javascript:alert(1)', /names a javascript: URL, not an http\(s\) one/],
    ['file:', 'file:///etc/passwd', /names a file: URL/],
    ['data:', 'data:text/plain,hi', /names a data: URL/],
    ['userinfo', 'https://user:pw@mcp.example.com:8443/messages', /user name or password/],
    ['a user name on the same host', 'https://mcp.example.com:8443@evil.example/', /user name or password/],
    ['nothing', '   ', /does not name a URL/],
  ])('refuses %s, saying nothing was sent there', (_what, data, message) => {
    expect(() => messageEndpointOf(data, stream)).toThrow(message);
    expect(() => messageEndpointOf(data, stream)).toThrow(/nothing was sent there/);
  });

  it('refuses data longer than MAX_ENDPOINT_EVENT_BYTES and takes data of exactly that length', () => {
    const path = (bytes: number) => `/m?x=${'a'.repeat(bytes - 5)}`;
    expect(messageEndpointOf(path(MAX_ENDPOINT_EVENT_BYTES), stream).pathname).toBe('/m');
    expect(() => messageEndpointOf(path(MAX_ENDPOINT_EVENT_BYTES + 1), stream)).toThrow(`longer than ${MAX_ENDPOINT_EVENT_BYTES} bytes`);
  });
});

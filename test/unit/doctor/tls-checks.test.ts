// doctor's TLS settings lines: the CA stores named, the client certificate's subject and expiry with a warning before it runs out.

import { describe, expect, it } from 'vitest';
import type { BridgeConfig } from '../../../src/config/config.js';
import { caStoreNote, clientCertificateCheck } from '../../../src/doctor/tls-checks.js';

const DAY = 24 * 60 * 60 * 1000;
const now = Date.UTC(2030, 0, 1);
const withCertificate = (validTo: number) =>
  ({ clientCertificate: { certFile: '/c.pem', subject: 'CN=me', validTo: new Date(validTo) } }) as unknown as BridgeConfig;

describe('doctor TLS lines', () => {
  it("names Node's bundled roots alone, then each store added, in the order they are trusted", () => {
    const config = { caFile: undefined, useSystemCa: false } as unknown as BridgeConfig;
    expect(caStoreNote(config, {})).toBe("; CA store: Node's bundled roots");
    expect(caStoreNote({ ...config, caFile: '/ca.pem', useSystemCa: true }, { NODE_EXTRA_CA_CERTS: '/x.pem' })).toBe(
      "; CA store: Node's bundled roots + NODE_EXTRA_CA_CERTS + system store + --ca-file",
    );
  });

  it('shows no client certificate line without one', () => {
    expect(clientCertificateCheck({ clientCertificate: undefined } as unknown as BridgeConfig, now)).toBeUndefined();
  });

  it('shows the subject and expiry, warns within 30 days and fails once expired', () => {
    expect(clientCertificateCheck(withCertificate(now + 90 * DAY), now)).toEqual({
      name: 'client cert',
      ok: true,
      detail: 'CN=me, valid until 2030-04-01T00:00:00.000Z',
    });
    expect(clientCertificateCheck(withCertificate(now + 10 * DAY), now)).toMatchObject({
      ok: true,
      detail: expect.stringContaining('warning: expires in 10 days'),
    });
    expect(clientCertificateCheck(withCertificate(now - DAY), now)).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/: expired$/),
      hint: expect.stringContaining('/c.pem'),
    });
  });
});

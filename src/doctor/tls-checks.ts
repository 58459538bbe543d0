// doctor's lines for the run's TLS settings: the CA store in use, and the client certificate's subject and expiry.

import type { BridgeConfig } from '../config/config.js';
import { caStoreName } from '../http/dispatcher.js';

/** A client certificate this close to its expiry is flagged: time to renew it before it stops working. */
export const CLIENT_CERT_RENEW_DAYS = 30;
const DAY_MS = 24 * 60 * 60 * 1000;

/** One doctor line (the shape of doctor.ts's Check, kept here so the two modules do not import each other). */
interface Check {
  name: string;
  ok: boolean;
  detail: string;
  hint?: string;
}

/** The CA stores the bridge trusts, as a note for the tls line: "; CA store: Node's bundled roots + system store + --ca-file". */
export function caStoreNote(config: BridgeConfig, env: Readonly<Record<string, string | undefined>>): string {
  return `; CA store: ${caStoreName({ caFile: config.caFile, useSystemCa: config.useSystemCa, env })}`;
}

/** The client certificate line, or undefined without one: expired fails, expiring within CLIENT_CERT_RENEW_DAYS warns. */
export function clientCertificateCheck(config: BridgeConfig, now: number): Check | undefined {
  const client = config.clientCertificate;
  if (client === undefined) return undefined;
  const left = client.validTo.getTime() - now;
  const until = `${client.subject}, valid until ${client.validTo.toISOString()}`;
  if (left <= 0) {
    return {
      name: 'client cert',
      ok: false,
      detail: `${until}: expired`,
      hint: `renew the certificate in --client-cert ${client.certFile}: a server refuses an expired one`,
    };
  }
  const days = Math.floor(left / DAY_MS);
  const warning = days < CLIENT_CERT_RENEW_DAYS ? ` (warning: expires in ${days} day${days === 1 ? '' : 's'}; renew it soon)` : '';
  return { name: 'client cert', ok: true, detail: `${until}${warning}` };
}

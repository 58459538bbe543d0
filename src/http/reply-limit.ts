// The one error a reply past --max-message-bytes is answered with, a JSON body or an event's data alike.

import { BridgeError } from '../core/errors.js';

/** REPLY_TOO_LARGE for a message over `maxBytes`; `status` when the caller knows the reply's (else withStatus adds it). */
export function replyTooLarge(maxBytes: number, status?: number): BridgeError {
  return new BridgeError('REPLY_TOO_LARGE', `the reply is larger than ${maxBytes} bytes`, {
    ...(status === undefined ? {} : { status }),
    hint: 'raise --max-message-bytes if such large replies are expected',
  });
}

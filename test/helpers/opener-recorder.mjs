// A stand-in for the system browser (BROWSER=<node> <this file>): appends its arguments as one JSON line to OPENER_RECORD, then denies the sign-in.
/* global fetch */
//
// Denying through the callback (error=access_denied with the URL's state) makes the bridge answer
// only after this script ran, so a test reads the record without waiting on a clock.
import { appendFileSync } from 'node:fs';

const args = process.argv.slice(2);
appendFileSync(process.env.OPENER_RECORD, `${JSON.stringify(args)}\n`);
const url = new URL(args[0]);
const redirect = url.searchParams.get('redirect_uri');
const state = url.searchParams.get('state');
if (redirect !== null && state !== null) {
  const callback = new URL(redirect);
  callback.searchParams.set('state', state);
  callback.searchParams.set('error', 'access_denied');
  // OPENER_ERROR_DESCRIPTION: what the "authorization server" says about the denial.
  if (process.env.OPENER_ERROR_DESCRIPTION) callback.searchParams.set('error_description', process.env.OPENER_ERROR_DESCRIPTION);
  await (await fetch(callback)).text();
}
